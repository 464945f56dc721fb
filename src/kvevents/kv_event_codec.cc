#include "kvevents/kv_event_codec.h"

#include <fmt/format.h>

#include "kvevents/msgpack.h"

namespace gpuscale::kvevents {
namespace {

using Type = MsgValue::Type;

// Where a value sits, for messages: "event 3: BlockStored.block_hashes".
struct Where {
  std::string event;  // "event 3: BlockStored" or "batch"
  std::string_view field;
  std::string Name() const { return field.empty() ? event : fmt::format("{}.{}", event, field); }
};

Unexpected<Error> WrongType(const Where& at, std::string_view want, const MsgValue& got) {
  return InvalidArgument(fmt::format("expected {}, got {}", want, MsgTypeName(got.type)),
                         at.Name());
}

Result<uint64_t> BlockHash(const MsgValue& v, const Where& at) {
  if (v.type == Type::kUint) return v.uint;
  if (v.type == Type::kInt) return static_cast<uint64_t>(v.sint);
  if (v.type == Type::kBin) {
    uint64_t h = 0;
    for (char c : v.bytes) h = (h << 8) | static_cast<uint8_t>(c);  // keeps the low 64 bits
    return h;
  }
  return WrongType(at, "a block hash (integer or bytes)", v);
}

// An array whose every element `read` accepts (BlockHash, Integer).
template <typename T>
Result<std::vector<T>> ArrayOf(const MsgValue& v, const Where& at,
                               Result<T> (*read)(const MsgValue&, const Where&)) {
  if (v.type != Type::kArray) return WrongType(at, "an array", v);
  std::vector<T> out;
  out.reserve(v.items.size());
  for (const MsgValue& item : v.items) {
    GS_ASSIGN_OR_RETURN(T value, read(item, at));
    out.push_back(value);
  }
  return out;
}

Result<int64_t> Integer(const MsgValue& v, const Where& at) {
  if (v.type == Type::kInt) return v.sint;
  if (v.type == Type::kUint && v.uint <= INT64_MAX) return static_cast<int64_t>(v.uint);
  return WrongType(at, "an integer", v);
}

Result<std::optional<int64_t>> OptionalInteger(const MsgValue* v, const Where& at) {
  if (v == nullptr || v->type == Type::kNil) return std::optional<int64_t>();
  GS_ASSIGN_OR_RETURN(int64_t i, Integer(*v, at));
  return std::optional<int64_t>(i);
}

Result<std::string> OptionalString(const MsgValue* v, const Where& at) {
  if (v == nullptr || v->type == Type::kNil) return std::string();
  if (v->type != Type::kStr) return WrongType(at, "a string or nil", *v);
  return std::string(v->bytes);
}

// An event's fields by name, whichever form it came in. Positional fields map to the names
// in `order` (the field list of its kind, in vLLM's declaration order).
class Fields {
 public:
  const MsgValue* Get(std::string_view name) const {
    for (const auto& [key, value] : named_) {
      if (key == name) return value;
    }
    return nullptr;
  }
  void Add(std::string_view name, const MsgValue* value) { named_.emplace_back(name, value); }

 private:
  std::vector<std::pair<std::string_view, const MsgValue*>> named_;
};

constexpr std::string_view kStoredOrder[] = {"block_hashes", "parent_block_hash", "token_ids",
                                             "block_size",   "lora_id",           "medium"};
constexpr std::string_view kRemovedOrder[] = {"block_hashes", "medium"};

Result<KvEvent> StoredEvent(const Fields& f, Where at) {
  KvEvent e;
  e.kind = KvEventKind::kBlockStored;
  for (std::string_view name : {"block_hashes", "token_ids", "block_size"}) {
    if (f.Get(name) == nullptr) {
      at.field = name;
      return InvalidArgument("missing", at.Name());
    }
  }
  at.field = "block_hashes";
  GS_ASSIGN_OR_RETURN(e.block_hashes, ArrayOf<uint64_t>(*f.Get("block_hashes"), at, BlockHash));
  at.field = "parent_block_hash";
  if (const MsgValue* p = f.Get("parent_block_hash"); p != nullptr && p->type != Type::kNil) {
    GS_ASSIGN_OR_RETURN(uint64_t parent, BlockHash(*p, at));
    e.parent_block_hash = parent;
  }
  at.field = "token_ids";
  GS_ASSIGN_OR_RETURN(e.token_ids, ArrayOf<int64_t>(*f.Get("token_ids"), at, Integer));
  at.field = "block_size";
  GS_ASSIGN_OR_RETURN(e.block_size, Integer(*f.Get("block_size"), at));
  if (e.block_size < 0) return InvalidArgument("must be >= 0", at.Name());
  at.field = "lora_id";
  GS_ASSIGN_OR_RETURN(e.lora_id, OptionalInteger(f.Get("lora_id"), at));
  at.field = "medium";
  GS_ASSIGN_OR_RETURN(e.medium, OptionalString(f.Get("medium"), at));
  return e;
}

Result<KvEvent> RemovedEvent(const Fields& f, Where at) {
  KvEvent e;
  e.kind = KvEventKind::kBlockRemoved;
  at.field = "block_hashes";
  const MsgValue* hashes = f.Get("block_hashes");
  if (hashes == nullptr) return InvalidArgument("missing", at.Name());
  GS_ASSIGN_OR_RETURN(e.block_hashes, ArrayOf<uint64_t>(*hashes, at, BlockHash));
  at.field = "medium";
  GS_ASSIGN_OR_RETURN(e.medium, OptionalString(f.Get("medium"), at));
  return e;
}

// The tag and the fields of one event, positional ([tag, ...]) or named ({"type": tag, ...}).
Result<std::pair<std::string_view, Fields>> TagAndFields(const MsgValue& v, const Where& at) {
  Fields fields;
  const MsgValue* tag = nullptr;
  if (v.type == Type::kArray && !v.items.empty()) {
    tag = &v.items[0];
    std::span<const std::string_view> order;
    if (tag->type == Type::kStr && tag->bytes == "BlockStored") order = kStoredOrder;
    if (tag->type == Type::kStr && tag->bytes == "BlockRemoved") order = kRemovedOrder;
    for (size_t i = 0; i < order.size() && i + 1 < v.items.size(); ++i) {
      fields.Add(order[i], &v.items[i + 1]);
    }
  } else if (v.type == Type::kMap) {
    for (size_t i = 0; i + 1 < v.items.size(); i += 2) {
      if (v.items[i].type != Type::kStr) continue;  // not a field of any vLLM event
      if (v.items[i].bytes == "type")
        tag = &v.items[i + 1];
      else
        fields.Add(v.items[i].bytes, &v.items[i + 1]);
    }
  } else {
    return WrongType(at, "a tagged array or a map", v);
  }
  if (tag == nullptr) return InvalidArgument("no event tag (\"type\")", at.Name());
  if (tag->type != Type::kStr) return WrongType(at, "a string tag", *tag);
  return std::pair{tag->bytes, std::move(fields)};
}

Result<KvEvent> Event(const MsgValue& v, size_t index) {
  Where at{fmt::format("event {}", index), {}};
  GS_ASSIGN_OR_RETURN(auto tagged, TagAndFields(v, at));
  const auto& [tag, fields] = tagged;
  at.event = fmt::format("event {}: {}", index, tag);
  if (tag == "BlockStored") return StoredEvent(fields, at);
  if (tag == "BlockRemoved") return RemovedEvent(fields, at);
  if (tag == "AllBlocksCleared") return KvEvent{};
  return InvalidArgument(fmt::format("unknown event tag \"{}\"", tag),
                         fmt::format("event {}", index));
}

// The batch's three fields, positional or named.
Result<KvEventBatch> Batch(const MsgValue& root) {
  const MsgValue* ts = nullptr;
  const MsgValue* events = nullptr;
  const MsgValue* rank = nullptr;
  if (root.type == Type::kArray) {
    if (root.items.size() < 2) {
      return InvalidArgument("expected [ts, events, data_parallel_rank?]", "batch");
    }
    ts = &root.items[0];
    events = &root.items[1];
    if (root.items.size() > 2) rank = &root.items[2];
  } else if (root.type == Type::kMap) {
    for (size_t i = 0; i + 1 < root.items.size(); i += 2) {
      const MsgValue& key = root.items[i];
      if (key.type != Type::kStr) continue;
      if (key.bytes == "ts") ts = &root.items[i + 1];
      if (key.bytes == "events") events = &root.items[i + 1];
      if (key.bytes == "data_parallel_rank") rank = &root.items[i + 1];
    }
    if (ts == nullptr || events == nullptr) return InvalidArgument("missing ts or events", "batch");
  } else {
    return WrongType(Where{"batch", {}}, "an array or a map", root);
  }
  KvEventBatch batch;
  if (ts->type == Type::kFloat)
    batch.ts = ts->real;
  else if (ts->type == Type::kUint)
    batch.ts = static_cast<double>(ts->uint);
  else
    return WrongType(Where{"batch", "ts"}, "a number", *ts);
  if (events->type != Type::kArray) return WrongType(Where{"batch", "events"}, "an array", *events);
  GS_ASSIGN_OR_RETURN(batch.data_parallel_rank,
                      OptionalInteger(rank, Where{"batch", "data_parallel_rank"}));
  batch.events.reserve(events->items.size());
  for (size_t i = 0; i < events->items.size(); ++i) {
    GS_ASSIGN_OR_RETURN(KvEvent e, Event(events->items[i], i));
    batch.events.push_back(std::move(e));
  }
  return batch;
}

void WriteEvent(const KvEvent& e, MsgWriter& w) {
  if (e.kind == KvEventKind::kAllBlocksCleared) {
    w.ArrayHeader(1);
    w.Str(KvEventKindName(e.kind));
    return;
  }
  const bool stored = e.kind == KvEventKind::kBlockStored;
  w.ArrayHeader(stored ? 7 : 3);
  w.Str(KvEventKindName(e.kind));
  w.ArrayHeader(static_cast<uint32_t>(e.block_hashes.size()));
  for (uint64_t h : e.block_hashes) w.Uint(h);
  if (stored) {
    if (e.parent_block_hash)
      w.Uint(*e.parent_block_hash);
    else
      w.Nil();
    w.ArrayHeader(static_cast<uint32_t>(e.token_ids.size()));
    for (int64_t t : e.token_ids) w.Int(t);
    w.Int(e.block_size);
    if (e.lora_id)
      w.Int(*e.lora_id);
    else
      w.Nil();
  }
  if (e.medium.empty())
    w.Nil();
  else
    w.Str(e.medium);
}

}  // namespace

std::string_view KvEventKindName(KvEventKind kind) {
  switch (kind) {
    case KvEventKind::kBlockStored:
      return "BlockStored";
    case KvEventKind::kBlockRemoved:
      return "BlockRemoved";
    case KvEventKind::kAllBlocksCleared:
      return "AllBlocksCleared";
  }
  return "?";
}

Result<KvEventBatch> DecodeKvEventBatch(std::span<const uint8_t> payload) {
  GS_ASSIGN_OR_RETURN(MsgValue root, ParseMsgpack(payload));
  return Batch(root);
}

Result<KvEventBatch> DecodeKvEventBatch(std::string_view payload) {
  return DecodeKvEventBatch(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()));
}

Result<uint64_t> DecodeKvEventSeq(std::string_view frame) {
  if (frame.size() != 8) {
    return InvalidArgument(fmt::format("expected 8 bytes, got {}", frame.size()), "sequence");
  }
  uint64_t seq = 0;
  for (char c : frame) seq = (seq << 8) | static_cast<uint8_t>(c);
  return seq;
}

Result<KvEventMessage> DecodeKvEventMessage(std::span<const std::string_view> frames) {
  if (frames.size() != 3) {
    return InvalidArgument(
        fmt::format("expected 3 frames (topic, sequence, payload), got {}", frames.size()));
  }
  KvEventMessage m;
  m.topic = std::string(frames[0]);
  GS_ASSIGN_OR_RETURN(m.seq, DecodeKvEventSeq(frames[1]));
  GS_ASSIGN_OR_RETURN(m.batch, DecodeKvEventBatch(frames[2]));
  return m;
}

std::string EncodeKvEventBatch(const KvEventBatch& batch) {
  MsgWriter w;
  w.ArrayHeader(batch.data_parallel_rank ? 3 : 2);
  w.Float(batch.ts);
  w.ArrayHeader(static_cast<uint32_t>(batch.events.size()));
  for (const KvEvent& e : batch.events) WriteEvent(e, w);
  if (batch.data_parallel_rank) w.Int(*batch.data_parallel_rank);
  return w.Take();
}

std::string EncodeKvEventSeq(uint64_t seq) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, seq >>= 8) out[i] = static_cast<char>(seq & 0xff);
  return out;
}

}  // namespace gpuscale::kvevents
