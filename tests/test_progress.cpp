#include "app/progress.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace minimod {
namespace {

/// A log line's leading local date and time, "2026-11-24 18:12:03 ".
const std::regex kTimestamp(R"(^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} )");

/// The lines of a log, each without its timestamp (every line must have one).
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    std::smatch stamp;
    EXPECT_TRUE(std::regex_search(line, stamp, kTimestamp)) << "no timestamp: " << line;
    lines.push_back(stamp.empty() ? line : line.substr(stamp.length()));
  }
  return lines;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

TEST(Progress, LogModeWritesOneLineAtEveryFivePercent) {
  std::ostringstream out;
  Progress progress(1000, 1e6, /*quiet=*/false, /*is_tty=*/false, &out);
  EXPECT_EQ(progress.style(), ProgressStyle::kLog);
  for (int step = 1; step <= 1000; ++step)
    progress.update(step);
  progress.finish(); // the 100% line is out already: nothing more

  const std::vector<std::string> lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 20u) << out.str();
  for (int mark = 1; mark <= 20; ++mark) {
    const std::string expected =
        "step " + std::to_string(50 * mark) + "/1000 (" + std::to_string(5 * mark) + "%) elapsed ";
    EXPECT_TRUE(starts_with(lines[mark - 1], expected)) << lines[mark - 1];
    EXPECT_NE(lines[mark - 1].find(", eta "), std::string::npos) << lines[mark - 1];
    EXPECT_NE(lines[mark - 1].find(" Mpoints/s"), std::string::npos) << lines[mark - 1];
  }
  EXPECT_EQ(out.str().find('\r'), std::string::npos);
}

TEST(Progress, LogModeWritesOneLineWhenAnUpdatePassesSeveralMarks) {
  std::ostringstream out;
  Progress progress(100, 1.0, false, false, &out);
  progress.update(3);  // below 5%: nothing
  progress.update(17); // passes 5, 10 and 15%
  progress.update(19);
  progress.update(20);
  const std::vector<std::string> lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 2u) << out.str();
  EXPECT_TRUE(starts_with(lines[0], "step 17/100 (17%) ")) << lines[0];
  EXPECT_TRUE(starts_with(lines[1], "step 20/100 (20%) ")) << lines[1];
}

TEST(Progress, LogModeHandlesTotalsThatAreNotMultiplesOfTwenty) {
  std::ostringstream out;
  Progress progress(7, 1.0, false, false, &out);
  for (int step = 1; step <= 7; ++step)
    progress.update(step);
  const std::vector<std::string> lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 7u) << out.str(); // each step is more than 5%
  EXPECT_TRUE(starts_with(lines[0], "step 1/7 (14%) ")) << lines[0];
  EXPECT_TRUE(starts_with(lines[6], "step 7/7 (100%) ")) << lines[6];
}

TEST(Progress, LogModeFinishWritesTheLastStateOnce) {
  std::ostringstream out;
  Progress progress(1000, 1.0, false, false, &out);
  progress.update(30);
  progress.update(20); // going back is ignored
  progress.finish();
  progress.finish();
  progress.update(1000); // after finish: ignored
  const std::vector<std::string> lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 1u) << out.str();
  EXPECT_TRUE(starts_with(lines[0], "step 30/1000 (3%) ")) << lines[0];
}

TEST(Progress, ReportsThroughputInMpointsPerSecond) {
  std::ostringstream out;
  Progress progress(20, 1e6, false, false, &out);
  progress.update(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  progress.update(2); // 10%: a line; one step of 1e6 points took at least 20 ms
  const std::string text = out.str();
  const std::smatch rate = [&] {
    std::smatch m;
    std::regex_search(text, m, std::regex(R"(, ([0-9.]+) Mpoints/s\n)"));
    return m;
  }();
  ASSERT_FALSE(rate.empty()) << text;
  const double mpoints = std::stod(rate[1].str());
  EXPECT_GT(mpoints, 0.0) << text;
  EXPECT_LE(mpoints, 50.0) << text;
}

TEST(Progress, FirstLineRightAfterTheStartHasNoRate) {
  // The run's first update comes right after the progress is made, with a step already done: a
  // rate from that near-zero time would read millions of Mpoints/s. It says "?" instead, and so
  // does the time left, until a later update timed a step.
  std::ostringstream out;
  Progress progress(100, 6e7, false, /*is_tty=*/true, &out);
  progress.update(1);
  const std::string first = out.str();
  EXPECT_NE(first.find("eta ?  ? Mpoints/s"), std::string::npos) << first;
  std::this_thread::sleep_for(std::chrono::milliseconds(150)); // past the redraw interval
  progress.update(2);
  const std::string second = out.str().substr(first.size());
  EXPECT_EQ(second.find("? Mpoints/s"), std::string::npos) << second;
  EXPECT_EQ(second.find("eta ?"), std::string::npos) << second;
}

TEST(Progress, QuietWritesNothing) {
  std::ostringstream out;
  {
    Progress progress(100, 1.0, /*quiet=*/true, /*is_tty=*/true, &out);
    EXPECT_EQ(progress.style(), ProgressStyle::kQuiet);
    for (int step = 1; step <= 100; ++step)
      progress.update(step);
    progress.finish();
  }
  EXPECT_TRUE(out.str().empty()) << out.str();
}

TEST(Progress, TerminalModeRedrawsOneLineAndEndsIt) {
  std::ostringstream out;
  Progress progress(100000, 1.0, false, /*is_tty=*/true, &out);
  EXPECT_EQ(progress.style(), ProgressStyle::kTerminal);
  for (int step = 1; step <= 100000; ++step)
    progress.update(step);
  progress.finish();

  const std::string text = out.str();
  const auto redraws = std::count(text.begin(), text.end(), '\r');
  EXPECT_GE(redraws, 2); // the first state and the last
  EXPECT_LT(redraws, 100) << "redraws are not rate-limited";
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  const std::string last = text.substr(text.rfind('\r'));
  EXPECT_NE(last.find("100% 100000/100000"), std::string::npos) << last;
  EXPECT_NE(last.find("eta 0.0 s"), std::string::npos) << last;
}

TEST(Progress, TerminalLineIsEndedWhenTheRunIsAbandoned) {
  std::ostringstream out;
  {
    Progress progress(10, 1.0, false, true, &out);
    progress.update(3);
  } // no finish(): as when an exception leaves the time loop
  const std::string text = out.str();
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
}

TEST(Progress, SurveyLineNamesTheShotTheShotsDoneAndTheSurveyEta) {
  std::ostringstream out;
  Progress progress(100, 1.0, false, false, &out);
  SurveyPosition position;
  position.shot = 7;
  position.shots_done = 2;
  position.shots_total = 10;
  position.shots_left_after = 3;
  position.mean_shot_s = 600.0; // 10 minutes a shot
  progress.set_survey(position);
  progress.update(100); // this shot is done: eta is the three shots left at the mean
  const std::vector<std::string> lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 1u) << out.str();
  EXPECT_NE(lines[0].find(", shot 7, 2/10 done, survey eta 30m00s"), std::string::npos) << lines[0];
}

TEST(Progress, SurveyEtaBeforeAnyShotFinishedIsUnknownAtTheStart) {
  std::ostringstream out;
  Progress progress(100, 1.0, false, /*is_tty=*/true, &out);
  SurveyPosition position;
  position.shot = 0;
  position.shots_total = 4;
  position.shots_left_after = 3;
  progress.set_survey(position);
  progress.update(0);
  EXPECT_NE(out.str().find("shot 0  0/4 done  survey eta ?"), std::string::npos) << out.str();
}

TEST(Progress, TerminalLinesCarryNoTimestamp) {
  std::ostringstream out;
  Progress progress(10, 1.0, false, /*is_tty=*/true, &out);
  progress.update(5);
  progress.finish();
  EXPECT_EQ(out.str().rfind("\r[", 0), 0u) << out.str();
}

} // namespace
} // namespace minimod
