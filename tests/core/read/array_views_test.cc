// Array::ViewAt, InstantAt and the view cache (issue 5, target 4): a view's
// instant and fragments are those of the listing rules whatever the order
// views are asked for; the cache keeps at most Array::kCachedViews views of
// its own, and a view held elsewhere is found again, not rebuilt.
#include <gtest/gtest.h>

#include <set>

#include "core/array/array.h"
#include "core/array/array_view.h"

namespace tiledbfs::core {
namespace {

std::shared_ptr<Array> OpenCorpus(const std::string& name) {
  auto storage = LocalStorage::Open(std::string(TILEDBFS_TEST_DATA) + "/corpus/arrays/" + name);
  EXPECT_TRUE(storage.ok());
  auto a = Array::Open(*storage, std::nullopt, DefaultLimits());
  EXPECT_TRUE(a.ok()) << a.error().message();
  return *a;
}

std::vector<std::string> Names(const ArrayView& v) {
  std::vector<std::string> out;
  for (const auto& f : v.fragments()) out.push_back(f->dir());
  return out;
}

// The fragments a view at t takes, by the rules of array.h, from the listing.
std::vector<std::string> Expected(const Array& a, uint64_t t) {
  const bool sparse = !a.LatestSchema()->dense();
  auto in_view = [&](const TimestampedName& n) {
    return (sparse && n.version >= 15) ? n.t1 <= t : n.t2 <= t;
  };
  std::set<std::string> retired;
  for (const VacuumFile& v : a.listing().fragment_vacuums) {
    if (in_view(v.name)) retired.insert(v.entries.begin(), v.entries.end());
  }
  std::vector<std::string> out;
  for (const FragmentEntry& e : a.listing().fragments) {
    if (in_view(e.name) && retired.count(e.dir) == 0) out.push_back(e.dir);
  }
  return out;
}

class ArrayViewsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ArrayViewsTest, EveryInstantNewestFirstMatchesTheRules) {
  std::shared_ptr<Array> a = OpenCorpus(GetParam());
  auto instants = a->Instants();
  ASSERT_TRUE(instants.ok());
  std::vector<uint64_t> ts(instants->rbegin(), instants->rend());
  ts.push_back(UINT64_MAX);
  ts.push_back(0);
  for (uint64_t t : ts) {
    auto view = a->ViewAt(t);
    ASSERT_TRUE(view.ok()) << t << ": " << view.error().message();
    EXPECT_EQ((*view)->instant(), a->InstantAt(t)) << t;
    EXPECT_EQ(Names(**view), Expected(*a, t)) << t;
    EXPECT_EQ((*view)->timestamp(), t);
  }
  // A second Array asked in the other order agrees.
  std::shared_ptr<Array> b = OpenCorpus(GetParam());
  for (auto it = ts.rbegin(); it != ts.rend(); ++it) {
    auto view = b->ViewAt(*it);
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(Names(**view), Expected(*b, *it));
    EXPECT_EQ((*view)->instant(), a->InstantAt(*it));
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, ArrayViewsTest,
                         ::testing::Values("dense_2d_fragments", "consolidated",
                                           "consolidated_vacuumed", "commits_consolidated",
                                           "deletes", "sparse_2d", "with_timestamps",
                                           "schema_evolution", "metadata"));

TEST(ArrayViewCacheTest, KeepsABoundedNumberAndFindsHeldViews) {
  std::shared_ptr<Array> a = OpenCorpus("dense_2d_fragments");
  auto held = a->ViewAt(1);
  ASSERT_TRUE(held.ok());
  std::weak_ptr<const ArrayView> dropped;
  {
    auto v = a->ViewAt(2);
    ASSERT_TRUE(v.ok());
    dropped = *v;
  }
  // Many other timestamps push both out of the cache.
  for (uint64_t t = 1000; t < 1000 + 4 * Array::kCachedViews; ++t) ASSERT_TRUE(a->ViewAt(t).ok());
  EXPECT_TRUE(dropped.expired());  // not kept by the cache any more
  auto again = a->ViewAt(1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), held->get());  // held by us: the same view
  // The most recent ones are kept without anyone holding them.
  std::weak_ptr<const ArrayView> recent;
  {
    auto v = a->ViewAt(5000);
    ASSERT_TRUE(v.ok());
    recent = *v;
  }
  EXPECT_FALSE(recent.expired());
  auto same = a->ViewAt(5000);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->get(), recent.lock().get());
}

TEST(ArrayViewCacheTest, LatestInstantIsTheLastInstant) {
  std::shared_ptr<Array> a = OpenCorpus("dense_2d_fragments");
  auto instants = a->Instants();
  auto latest = a->LatestInstant();
  ASSERT_TRUE(instants.ok() && latest.ok());
  ASSERT_FALSE(instants->empty());
  EXPECT_EQ(*latest, instants->back());
  EXPECT_EQ(a->InstantAt(UINT64_MAX), *latest);
  if (instants->front() > 0) {
    EXPECT_EQ(a->InstantAt(instants->front() - 1), 0u);
  }
}

}  // namespace
}  // namespace tiledbfs::core
