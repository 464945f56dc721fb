#include "net/connection_table.h"

namespace gpuscale::net {

ConnectionTable::Entry* ConnectionTable::OldestWaiting(const std::string& peer) {
  for (auto& [order, id] : waiting_) {
    Entry& e = entries_.at(id);
    if (peer.empty() || e.peer == peer) return &e;
  }
  return nullptr;
}

ConnectionTable::Admission ConnectionTable::Admit(const std::string& peer) {
  MutexLock lock(mu_);
  Admission admission;
  const bool peer_full = max_per_peer_ > 0 && per_peer_[peer] >= max_per_peer_;
  const bool total_full = live_ >= max_total_;
  if (peer_full || total_full) {
    Entry* victim = OldestWaiting(peer_full ? peer : std::string());
    if (victim == nullptr) {
      if (per_peer_[peer] == 0) per_peer_.erase(peer);
      return admission;  // every connection in scope is busy: the newcomer is refused
    }
    victim->state = State::kDisplaced;
    waiting_.erase(victim->waiting_since);
    if (--per_peer_[victim->peer] == 0) per_peer_.erase(victim->peer);
    --live_;
    ++displaced_;
    admission.evict = std::move(victim->close);
  }
  admission.admitted = true;
  admission.id = next_id_++;
  entries_.emplace(admission.id, Entry{.peer = peer, .close = nullptr});
  ++per_peer_[peer];
  ++live_;
  return admission;
}

void ConnectionTable::Waiting(Id id, std::function<void()> close) {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.state == State::kDisplaced) return;
  Entry& e = it->second;
  if (e.state == State::kWaiting) waiting_.erase(e.waiting_since);
  e.state = State::kWaiting;
  e.waiting_since = next_wait_++;
  e.close = std::move(close);
  waiting_.emplace(e.waiting_since, id);
}

bool ConnectionTable::Active(Id id) {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.state == State::kDisplaced) return false;
  Entry& e = it->second;
  if (e.state == State::kWaiting) waiting_.erase(e.waiting_since);
  e.state = State::kBusy;
  e.close = nullptr;
  return true;
}

void ConnectionTable::Remove(Id id) {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  if (e.state != State::kDisplaced) {
    if (e.state == State::kWaiting) waiting_.erase(e.waiting_since);
    if (--per_peer_[e.peer] == 0) per_peer_.erase(e.peer);
    --live_;
  }
  entries_.erase(it);
}

bool ConnectionTable::Displaced(Id id) const {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  return it != entries_.end() && it->second.state == State::kDisplaced;
}

int ConnectionTable::size() const {
  MutexLock lock(mu_);
  return live_;
}

int ConnectionTable::displaced() const {
  MutexLock lock(mu_);
  return displaced_;
}

}  // namespace gpuscale::net
