// Two adapters in one process, each serving its own fake tree through a real
// mount: the adapter keeps no global state. Skipped without /dev/fuse.
#include "fusefs/fuse/fuse_adapter.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <sstream>
#include <string>

#include "tests/fusefs/fuse/fake_tree.h"

namespace tiledbfs::fusefs {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool IsMountPoint(const std::string& dir) {
  struct stat a, b;
  return ::stat(dir.c_str(), &a) == 0 && ::stat((dir + "/..").c_str(), &b) == 0 &&
         a.st_dev != b.st_dev;
}

class Served {
 public:
  explicit Served(const std::string& dir) : dir_(dir) {
    AdapterOptions options;
    options.uid = ::getuid();
    options.gid = ::getgid();
    auto tree = std::make_unique<testing::FakeTree>();
    tree_ = tree.get();
    adapter_ = std::make_unique<FuseAdapter>(std::move(tree), options);
    MountConfig config;
    config.mountpoint = dir;
    config.fsname = "fake-tree";
    config.handle_signals = false;
    mounted_ = adapter_->Mount(config);
    if (mounted_.ok()) {
      done_ = std::async(std::launch::async, [this] { return adapter_->Serve(); });
    }
  }
  ~Served() {
    if (!mounted_.ok()) return;
    const std::string cmd = "fusermount3 -u '" + dir_ + "' 2>/dev/null";
    if (std::system(cmd.c_str()) != 0 || !Stopped()) {
      std::system(("fusermount3 -u -z '" + dir_ + "' 2>/dev/null").c_str());
    }
    if (Stopped()) {
      EXPECT_TRUE(done_.get().ok());
    }
  }
  bool Stopped() { return done_.wait_for(std::chrono::seconds(20)) == std::future_status::ready; }
  const core::Status& mounted() const { return mounted_; }
  const testing::FakeTree& tree() const { return *tree_; }

 private:
  std::string dir_;
  testing::FakeTree* tree_ = nullptr;  // the adapter's
  std::unique_ptr<FuseAdapter> adapter_;
  core::Status mounted_;
  std::future<core::Status> done_;
};

TEST(FuseAdapter, TwoAdaptersInOneProcess) {
  if (::access("/dev/fuse", R_OK | W_OK) != 0) GTEST_SKIP() << "/dev/fuse is missing";
  char t1[] = "/tmp/tiledbfs_adapterXXXXXX";
  char t2[] = "/tmp/tiledbfs_adapterXXXXXX";
  ASSERT_NE(::mkdtemp(t1), nullptr);
  ASSERT_NE(::mkdtemp(t2), nullptr);
  {
    Served a(t1), b(t2);
    ASSERT_TRUE(a.mounted().ok()) << a.mounted().error().ToString();
    ASSERT_TRUE(b.mounted().ok()) << b.mounted().error().ToString();
    EXPECT_TRUE(IsMountPoint(t1));
    EXPECT_TRUE(IsMountPoint(t2));
    EXPECT_EQ(Slurp(std::string(t1) + "/hello.txt"), "hello, world\n");
    EXPECT_EQ(Slurp(std::string(t2) + "/dir/sub/c.txt"), "ccc\n");
    // Told once, before the first request was answered (the tile cache
    // then warms the heap for the first reads).
    EXPECT_EQ(a.tree().serving_calls(), 1);
    EXPECT_EQ(b.tree().serving_calls(), 1);
    // Each tree counts its own opens.
    EXPECT_EQ(Slurp(std::string(t1) + "/counter.txt"), "open 00000001\n");
    EXPECT_EQ(Slurp(std::string(t2) + "/counter.txt"), "open 00000001\n");
    EXPECT_EQ(Slurp(std::string(t1) + "/counter.txt"), "open 00000002\n");
    struct stat st;
    ASSERT_EQ(::stat((std::string(t2) + "/big.bin").c_str(), &st), 0);
    EXPECT_EQ(st.st_size, (5 << 20) + 123);
    EXPECT_EQ(st.st_mode & 07777, 0444);
  }
  EXPECT_FALSE(IsMountPoint(t1));
  EXPECT_FALSE(IsMountPoint(t2));
  ::rmdir(t1);
  ::rmdir(t2);
}

TEST(FuseAdapter, MountErrors) {
  if (::access("/dev/fuse", R_OK | W_OK) != 0) GTEST_SKIP() << "/dev/fuse is missing";
  FuseAdapter adapter(std::make_unique<testing::FakeTree>(), AdapterOptions{});
  MountConfig config;
  config.mountpoint = "/nonexistent/tiledbfs/mnt";
  auto s = adapter.Mount(config);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), core::ErrorCode::kIo);
  EXPECT_NE(s.error().message().find("/nonexistent/tiledbfs/mnt"), std::string::npos);

  FuseAdapter adapter2(std::make_unique<testing::FakeTree>(), AdapterOptions{});
  config.mountpoint = "/tmp";
  config.fuse_options = {"no_such_option"};
  auto s2 = adapter2.Mount(config);
  ASSERT_FALSE(s2.ok());
  EXPECT_EQ(s2.error().code(), core::ErrorCode::kInvalidArgument);
  EXPECT_FALSE(adapter2.Serve().ok());
}

}  // namespace
}  // namespace tiledbfs::fusefs
