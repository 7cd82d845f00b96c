#include "fusefs/fuse/listings.h"

#include <algorithm>

namespace tiledbfs::fusefs {

uint64_t Listings::Add(uint64_t ino, Entries entries) {
  std::lock_guard lock(mu_);
  // Ids stay below 2^31 so that every offset is a positive off_t.
  const uint64_t id = next_id_;
  next_id_ = next_id_ >= 0x7fffffffu ? 1 : next_id_ + 1;
  const size_t n = entries ? entries->size() : 0;
  held_.push_back(Held{id, ino, std::move(entries)});
  entries_ += n;
  // The newest always stays: its lister is about to read it.
  while (held_.size() > 1 && (held_.size() > max_listings_ || entries_ > max_entries_)) {
    entries_ -= held_.front().entries ? held_.front().entries->size() : 0;
    held_.pop_front();
  }
  return id;
}

Listings::Entries Listings::Find(uint64_t ino, uint64_t id) const {
  std::lock_guard lock(mu_);
  auto it = std::find_if(held_.begin(), held_.end(), [&](const Held& h) { return h.id == id; });
  if (it == held_.end() || it->ino != ino) return nullptr;
  return it->entries;
}

void Listings::Done(uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = std::find_if(held_.begin(), held_.end(), [&](const Held& h) { return h.id == id; });
  if (it == held_.end()) return;
  entries_ -= it->entries ? it->entries->size() : 0;
  held_.erase(it);
}

size_t Listings::size() const {
  std::lock_guard lock(mu_);
  return held_.size();
}

}  // namespace tiledbfs::fusefs
