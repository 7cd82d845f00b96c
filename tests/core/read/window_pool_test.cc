// The pool of sparse index windows views keep between reads
// (core/read/window_pool.h): one budget for every view, an owner's own
// entries never dropped for it, the others' least recently used first.
#include "core/read/window_pool.h"

#include <gtest/gtest.h>

#include <memory>

namespace tiledbfs::core {
namespace {

std::shared_ptr<const void> Entry() { return std::make_shared<int>(0); }

char owner_a, owner_b;  // two owners (their addresses)
const void* const kA = &owner_a;
const void* const kB = &owner_b;

TEST(WindowPoolTest, HoldingDropsOtherOwnersLeastRecentlyUsedFirst) {
  WindowPool pool(100);
  auto a1 = Entry(), a2 = Entry(), b1 = Entry();
  std::weak_ptr<const void> w1 = a1, w2 = a2, wb = b1;
  pool.Hold(kA, std::move(a1), 40);
  pool.Hold(kA, std::move(a2), 40);
  EXPECT_EQ(pool.held_bytes(), 80u);
  pool.Hold(kB, std::move(b1), 40);  // 120 > 100: A's oldest goes
  EXPECT_TRUE(w1.expired());
  EXPECT_FALSE(w2.expired());
  EXPECT_FALSE(wb.expired());
  EXPECT_EQ(pool.held_bytes(), 80u);
  EXPECT_EQ(pool.held(), 2u);
}

TEST(WindowPoolTest, AnOwnersOwnEntriesStayPastTheBudget) {
  WindowPool pool(10);
  std::weak_ptr<const void> w[3];
  for (auto& weak : w) {
    auto e = Entry();
    weak = e;
    pool.Hold(kA, std::move(e), 40);
  }
  for (const auto& weak : w) EXPECT_FALSE(weak.expired());
  EXPECT_EQ(pool.held_bytes(), 120u);
  // Another owner's hold takes them all but its own.
  auto b = Entry();
  pool.Hold(kB, b, 40);
  for (const auto& weak : w) EXPECT_TRUE(weak.expired());
  EXPECT_EQ(pool.held_bytes(), 40u);
}

TEST(WindowPoolTest, TouchedEntriesGoLast) {
  WindowPool pool(100);
  auto a1 = Entry(), a2 = Entry();
  std::weak_ptr<const void> w1 = a1, w2 = a2;
  const void* key1 = a1.get();
  pool.Hold(kA, std::move(a1), 40);
  pool.Hold(kA, std::move(a2), 40);
  pool.Touch(key1);
  pool.Hold(kB, Entry(), 40);
  EXPECT_FALSE(w1.expired());
  EXPECT_TRUE(w2.expired());
}

TEST(WindowPoolTest, AReadersEntryOutlivesItsDropAndReleaseLetsGo) {
  WindowPool pool(50);
  auto reader = Entry();  // a reader's hold (ReadState::window)
  std::weak_ptr<const void> w = reader;
  pool.Hold(kA, reader, 40);
  pool.Hold(kB, Entry(), 40);
  EXPECT_FALSE(w.expired());  // out of the pool, alive while the reader holds it
  EXPECT_EQ(pool.held_bytes(), 40u);
  reader.reset();
  EXPECT_TRUE(w.expired());

  auto e = Entry();
  std::weak_ptr<const void> we = e;
  const void* key = e.get();
  pool.Hold(kA, std::move(e), 10);
  pool.Hold(kA, std::shared_ptr<const void>(we.lock()), 10);  // held already: no double count
  EXPECT_EQ(pool.held_bytes(), 50u);
  pool.Release(key);
  EXPECT_TRUE(we.expired());
  EXPECT_EQ(pool.held_bytes(), 40u);
  pool.Release(key);  // not held: nothing
  EXPECT_EQ(pool.held_bytes(), 40u);
}

}  // namespace
}  // namespace tiledbfs::core
