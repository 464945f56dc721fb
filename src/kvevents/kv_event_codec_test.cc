#include "kvevents/kv_event_codec.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace gpuscale::kvevents {
namespace {

// Payloads are spelled byte by byte from the msgpack spec and vLLM's field order, not made by
// our encoder, so that a mistake shared by the encoder and the decoder cannot hide.
std::string B(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}
// A fixstr (up to 31 bytes): 0xa0 | length, then the bytes.
std::string S(std::string_view text) {
  return static_cast<char>(0xa0 | text.size()) + std::string(text);
}
const std::string kNil = B({0xc0});

// [1.5, [["BlockStored", [1, 2], nil, [10, 11, 12, 13], 2, nil, "GPU"]], 0]: the positional
// form of vLLM releases whose events are msgspec array_like.
std::string PositionalStored() {
  return B({0x93, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0x91, 0x97}) + S("BlockStored") +
         B({0x92, 0x01, 0x02}) + kNil + B({0x94, 0x0a, 0x0b, 0x0c, 0x0d, 0x02}) + kNil + S("GPU") +
         B({0x00});
}

TEST(KvEventCodecTest, DecodesPositionalBlockStored) {
  auto batch = DecodeKvEventBatch(PositionalStored());
  ASSERT_TRUE(batch) << batch.error().ToString();
  EXPECT_EQ(batch->ts, 1.5);
  ASSERT_EQ(batch->data_parallel_rank, 0);
  ASSERT_EQ(batch->events.size(), 1u);
  const KvEvent& e = batch->events[0];
  EXPECT_EQ(e.kind, KvEventKind::kBlockStored);
  EXPECT_EQ(e.block_hashes, (std::vector<uint64_t>{1, 2}));
  EXPECT_FALSE(e.parent_block_hash);
  EXPECT_EQ(e.token_ids, (std::vector<int64_t>{10, 11, 12, 13}));
  EXPECT_EQ(e.block_size, 2);
  EXPECT_FALSE(e.lora_id);
  EXPECT_EQ(e.medium, "GPU");
}

// Newer vLLM: the batch stays positional, each event is a map tagged by "type" and carries
// fields this decoder does not know (lora_name, extra_keys, group_idx, ...); the hash is a
// uint64 above INT64_MAX, as vLLM's int hashes are.
TEST(KvEventCodecTest, DecodesNamedBlockStoredWithNewerFields) {
  const std::string event = B({0x8b}) + S("type") + S("BlockStored") + S("block_hashes") +
                            B({0x91, 0xcf, 0xda, 0xb8, 0x9b, 0xaa, 0x7b, 0x58, 0x57, 0xc0}) +
                            S("parent_block_hash") + B({0xcd, 0x01, 0x00}) + S("token_ids") +
                            B({0x92, 0xcd, 0x9c, 0x40, 0x07}) + S("block_size") + B({0x10}) +
                            S("lora_id") + kNil + S("medium") + S("GPU") + S("lora_name") + kNil +
                            S("extra_keys") + B({0x91}) + kNil + S("group_idx") + B({0x00}) +
                            S("kv_cache_spec_kind") + S("full_attention");
  const std::string payload =
      B({0x93, 0xcb, 0x41, 0xda, 0xa8, 0xdb, 0xe0, 0x20, 0, 0, 0x91}) + event + B({0x00});
  auto batch = DecodeKvEventBatch(payload);
  ASSERT_TRUE(batch) << batch.error().ToString();
  EXPECT_EQ(batch->ts, 1789095808.5);
  ASSERT_EQ(batch->events.size(), 1u);
  const KvEvent& e = batch->events[0];
  EXPECT_EQ(e.kind, KvEventKind::kBlockStored);
  EXPECT_EQ(e.block_hashes, (std::vector<uint64_t>{15760518052499183552u}));
  EXPECT_EQ(e.parent_block_hash, 256u);
  EXPECT_EQ(e.token_ids, (std::vector<int64_t>{40000, 7}));
  EXPECT_EQ(e.block_size, 16);
  EXPECT_EQ(e.medium, "GPU");
}

// Removed in both forms and with or without medium (the first releases had none), cleared in
// both forms, and a batch without its rank (omit_defaults drops a nil rank).
TEST(KvEventCodecTest, DecodesRemovedAndClearedInEveryForm) {
  const std::string payload = B({0x92, 0x01, 0x95}) + B({0x92}) + S("BlockRemoved") +
                              B({0x91, 0x05}) +  // no medium
                              B({0x93}) + S("BlockRemoved") + B({0x92, 0x06, 0x07}) + S("CPU") +  //
                              B({0x82}) + S("type") + S("BlockRemoved") + S("block_hashes") +
                              B({0x91, 0x08}) + B({0x91}) + S("AllBlocksCleared") +  //
                              B({0x81}) + S("type") + S("AllBlocksCleared");
  auto batch = DecodeKvEventBatch(payload);
  ASSERT_TRUE(batch) << batch.error().ToString();
  EXPECT_EQ(batch->ts, 1.0);  // an integer ts is taken
  EXPECT_FALSE(batch->data_parallel_rank);
  ASSERT_EQ(batch->events.size(), 5u);
  EXPECT_EQ(batch->events[0].kind, KvEventKind::kBlockRemoved);
  EXPECT_EQ(batch->events[0].block_hashes, (std::vector<uint64_t>{5}));
  EXPECT_EQ(batch->events[1].block_hashes, (std::vector<uint64_t>{6, 7}));
  EXPECT_EQ(batch->events[1].medium, "CPU");
  EXPECT_EQ(batch->events[2].block_hashes, (std::vector<uint64_t>{8}));
  EXPECT_EQ(batch->events[3].kind, KvEventKind::kAllBlocksCleared);
  EXPECT_EQ(batch->events[4].kind, KvEventKind::kAllBlocksCleared);
}

// Bytes hashes fold to their low 64 big-endian bits (vLLM's own int conversion); a negative
// hash (Python's hash() in the first releases) is its two's complement.
// A batch struct without array_like encodes as a map; its rank may be nil.
TEST(KvEventCodecTest, DecodesNamedBatch) {
  const std::string payload = B({0x83}) + S("events") + B({0x91, 0x91}) + S("AllBlocksCleared") +
                              S("data_parallel_rank") + kNil + S("ts") +
                              B({0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0});
  auto batch = DecodeKvEventBatch(payload);
  ASSERT_TRUE(batch) << batch.error().ToString();
  EXPECT_EQ(batch->ts, 1.5);
  EXPECT_FALSE(batch->data_parallel_rank);
  ASSERT_EQ(batch->events.size(), 1u);
  EXPECT_EQ(batch->events[0].kind, KvEventKind::kAllBlocksCleared);
}

TEST(KvEventCodecTest, FoldsBytesAndNegativeHashes) {
  std::string digest = B({0xc4, 0x0a, 0xff, 0xff});  // bin 8 of 10 bytes
  for (int i = 1; i <= 8; ++i) digest.push_back(static_cast<char>(i));
  const std::string payload = B({0x92, 0x00, 0x91, 0x92}) + S("BlockRemoved") + B({0x92}) + digest +
                              B({0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfb});
  auto batch = DecodeKvEventBatch(payload);
  ASSERT_TRUE(batch) << batch.error().ToString();
  ASSERT_EQ(batch->events.size(), 1u);
  EXPECT_EQ(batch->events[0].block_hashes,
            (std::vector<uint64_t>{0x0102030405060708u, 0xfffffffffffffffbu}));
}

TEST(KvEventCodecTest, ErrorsNameTheEventAndField) {
  struct Case {
    std::string payload;
    std::string error;
  };
  const std::string cleared = B({0x91}) + S("AllBlocksCleared");
  const std::vector<Case> cases = {
      {B({0x92, 0x00, 0x92}) + cleared + B({0x95}) + S("BlockStored") + S("x") + kNil +
           B({0x90, 0x01}),
       "event 1: BlockStored.block_hashes: expected an array, got a string"},
      {B({0x92, 0x00, 0x91, 0x93}) + S("BlockStored") + B({0x90}) + kNil,
       "event 0: BlockStored.token_ids: missing"},
      {B({0x92, 0x00, 0x91, 0x92}) + S("BlockRemoved") + B({0x91, 0xca, 0, 0, 0, 0}),
       "event 0: BlockRemoved.block_hashes: expected a block hash (integer or bytes), got a "
       "float"},
      {B({0x92, 0x00, 0x91, 0x91}) + S("BlockMoved"), "event 0: unknown event tag \"BlockMoved\""},
      {B({0x92, 0x00, 0x91, 0x80}), "event 0: no event tag (\"type\")"},
      {B({0x92, 0x00, 0x91, 0x05}), "event 0: expected a tagged array or a map, got an integer"},
      {B({0x92}) + S("now") + B({0x90}), "batch.ts: expected a number, got a string"},
      {B({0x91, 0x00}), "batch: expected [ts, events, data_parallel_rank?]"},
      {B({0x93, 0x00, 0x90}) + S("r"),
       "batch.data_parallel_rank: expected an integer, got a string"},
  };
  for (const Case& c : cases) {
    auto batch = DecodeKvEventBatch(c.payload);
    ASSERT_FALSE(batch) << c.error;
    EXPECT_EQ(batch.error().ToString(), c.error);
  }
}

TEST(KvEventCodecTest, RefusesGarbageBytes) {
  const std::vector<std::string> garbage = {
      "",
      B({0xc1}),                                             // reserved
      B({0x92, 0x00}),                                       // truncated array
      B({0xdd, 0xff, 0xff, 0xff, 0xff, 0x00}),               // a 4-billion-element array in 6 bytes
      B({0xda, 0x00, 0x10, 'a'}),                            // str 16 longer than the input
      B({0x92, 0x00, 0x90, 0x00}),                           // a valid batch and a trailing byte
      std::string(40, static_cast<char>(0x91)) + B({0x90}),  // nested past the depth limit
      "GET / HTTP/1.1\r\n",
  };
  for (const std::string& g : garbage) {
    auto batch = DecodeKvEventBatch(g);
    EXPECT_FALSE(batch) << "decoded " << g.size() << " bytes of garbage";
  }
}

TEST(KvEventCodecTest, EncodesWhatItDecodes) {
  auto decoded = DecodeKvEventBatch(PositionalStored());
  ASSERT_TRUE(decoded) << decoded.error().ToString();
  // Our encoder writes vLLM's positional form: the same bytes as the hand-written payload.
  EXPECT_EQ(EncodeKvEventBatch(*decoded), PositionalStored());
  KvEventBatch batch;
  batch.ts = 12.25;
  KvEvent removed;
  removed.kind = KvEventKind::kBlockRemoved;
  removed.block_hashes = {UINT64_MAX, 0, 1u << 20};
  KvEvent stored;
  stored.kind = KvEventKind::kBlockStored;
  stored.block_hashes = {7, 8};
  stored.parent_block_hash = 6;
  stored.token_ids = {-1, 70000};
  stored.block_size = 1;
  stored.lora_id = 3;
  batch.events = {stored, removed, KvEvent{}};
  auto again = DecodeKvEventBatch(EncodeKvEventBatch(batch));
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(*again, batch);
}

TEST(KvEventCodecTest, DecodesMessageFramesAndSequence) {
  const std::string seq = B({0, 0, 0, 0, 0, 0, 0x01, 0x02});
  const std::string payload = PositionalStored();
  const std::vector<std::string_view> frames = {"kv-events", seq, payload};
  auto m = DecodeKvEventMessage(frames);
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->topic, "kv-events");
  EXPECT_EQ(m->seq, 258u);
  EXPECT_EQ(m->batch.events.size(), 1u);
  EXPECT_EQ(EncodeKvEventSeq(258), seq);
  EXPECT_FALSE(DecodeKvEventSeq(B({0x01, 0x02})));
  const std::vector<std::string_view> two = {seq, payload};
  EXPECT_FALSE(DecodeKvEventMessage(two));
}

}  // namespace
}  // namespace gpuscale::kvevents
