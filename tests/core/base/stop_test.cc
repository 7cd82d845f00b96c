// The process's stop (core/util/stop.h). It is never cleared, so every case
// that sets it runs in a child process of its own (a death test that must
// exit 0); the test binary itself never stops.
#include "core/util/stop.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace tiledbfs::core {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Ends the child: 0 if `failure` is empty, else 1 after saying why.
[[noreturn]] void ExitWith(const std::string& failure) {
  if (!failure.empty()) std::fprintf(stderr, "%s\n", failure.c_str());
  std::_Exit(failure.empty() ? 0 : 1);
}

TEST(StopTest, NotRequestedAtStart) {
  EXPECT_FALSE(StopRequested());
  EXPECT_TRUE(CheckStop("anything").ok());
  const auto start = steady_clock::now();
  EXPECT_TRUE(SleepUnlessStopped(milliseconds(30)));
  EXPECT_GE(steady_clock::now() - start, milliseconds(30));
  EXPECT_EQ(ErrorCodeName(ErrorCode::kCancelled), "cancelled");
}

TEST(StopTest, RequestedStopsChecksForGood) {
  EXPECT_EXIT(
      {
        RequestStop();
        const Status s = CheckStop("tile 3 of a0.tdb");
        if (!StopRequested()) ExitWith("StopRequested() is false after RequestStop()");
        if (s.ok()) ExitWith("CheckStop is ok after RequestStop()");
        if (s.error().code() != ErrorCode::kCancelled) ExitWith(s.error().ToString());
        if (s.error().ToString() !=
            "cancelled: tile 3 of a0.tdb: cancelled: the process is stopping")
          ExitWith("message: " + s.error().ToString());
        RequestStop();  // again: still stopped
        if (!StopRequested()) ExitWith("a second RequestStop() cleared it");
        ExitWith("");
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(StopTest, SetFromASignalHandler) {
  EXPECT_EXIT(
      {
        std::signal(SIGUSR1, [](int) { RequestStop(); });
        std::raise(SIGUSR1);
        ExitWith(StopRequested() ? "" : "the handler's RequestStop() was not seen");
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(StopTest, SleepEndsSoonAfterTheStop) {
  EXPECT_EXIT(
      {
        // A backoff of a minute, stopped from another thread once it sleeps.
        const auto start = steady_clock::now();
        std::thread stopper([] {
          std::this_thread::sleep_for(milliseconds(50));
          RequestStop();
        });
        const bool slept = SleepUnlessStopped(std::chrono::minutes(1));
        const auto took = steady_clock::now() - start;
        stopper.join();
        if (slept) ExitWith("SleepUnlessStopped slept to its end");
        // 50 ms, a slice, and room for a loaded machine.
        if (took > milliseconds(50) + kStopSlice + milliseconds(2000)) ExitWith("slept too long");
        if (SleepUnlessStopped(milliseconds(1000))) ExitWith("slept after the stop");
        ExitWith("");
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace tiledbfs::core
