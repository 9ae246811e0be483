#include "app/progress.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <unistd.h>

namespace minimod {

namespace {

/// "3.1 s" under a minute, "2m05s" under an hour, "1h02m" beyond.
std::string format_duration(double seconds) {
  char buffer[32];
  if (seconds < 59.95) {
    std::snprintf(buffer, sizeof buffer, "%.1f s", std::max(seconds, 0.0));
  } else if (seconds < 3600.0) {
    const long whole = static_cast<long>(seconds + 0.5);
    std::snprintf(buffer, sizeof buffer, "%ldm%02lds", whole / 60, whole % 60);
  } else {
    const long minutes = static_cast<long>(seconds / 60.0 + 0.5);
    std::snprintf(buffer, sizeof buffer, "%ldh%02ldm", minutes / 60, minutes % 60);
  }
  return buffer;
}

/// Three significant digits below 100, whole numbers above: "0.512", "81.2", "812", "12345".
std::string format_rate(double mpoints_per_s) {
  char buffer[32];
  if (mpoints_per_s >= 100.0)
    std::snprintf(buffer, sizeof buffer, "%.0f", mpoints_per_s);
  else
    std::snprintf(buffer, sizeof buffer, "%.3g", mpoints_per_s);
  return buffer;
}

/// "2026-11-24 18:12:03 ": local date and time, so a log line says when it was written.
std::string local_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S ", &local);
  return buffer;
}

} // namespace

bool stderr_is_terminal() {
  return isatty(STDERR_FILENO) == 1;
}

Progress::Progress(int total_steps, double points_per_step, bool quiet, bool is_tty,
                   std::ostream* out)
    : m_out(out), m_style(quiet || out == nullptr ? ProgressStyle::kQuiet
                          : is_tty                ? ProgressStyle::kTerminal
                                                  : ProgressStyle::kLog),
      m_total_steps(std::max(total_steps, 0)), m_points_per_step(points_per_step),
      m_start(Clock::now()), m_last_draw(m_start) {}

Progress::~Progress() {
  if (m_style == ProgressStyle::kTerminal && m_drawn) {
    try {
      *m_out << '\n' << std::flush;
    } catch (...) { // a destructor must not throw; a lost newline is harmless
    }
  }
}

void Progress::set_survey(const SurveyPosition& position) {
  m_survey = position;
  m_in_survey = true;
}

void Progress::update(int steps_done) {
  if (m_style == ProgressStyle::kQuiet || m_finished) return;
  steps_done = std::min(steps_done, m_total_steps);
  if (steps_done < m_steps_done) return;
  m_steps_done = steps_done;
  if (!m_has_base) {
    m_has_base = true;
    m_base_steps = steps_done;
    m_base_time = Clock::now();
  }

  if (m_style == ProgressStyle::kTerminal) {
    const Clock::time_point now = Clock::now();
    // Always draw the first and the last state; in between, at most every kRedrawInterval.
    if (!m_drawn || steps_done == m_total_steps || now - m_last_draw >= kRedrawInterval)
      draw_terminal_line(now);
    return;
  }

  if (m_next_mark > kMarks || steps_done < steps_at_mark(m_next_mark)) return;
  // One line even when one update passes several marks.
  while (m_next_mark <= kMarks && steps_done >= steps_at_mark(m_next_mark))
    ++m_next_mark;
  write_log_line(Clock::now());
}

void Progress::finish() {
  if (m_style == ProgressStyle::kQuiet || m_finished) return;
  const Clock::time_point now = Clock::now();
  if (m_style == ProgressStyle::kTerminal) {
    draw_terminal_line(now);
    *m_out << '\n' << std::flush;
    m_drawn = false;
  } else if (m_last_logged_steps != m_steps_done) {
    write_log_line(now);
  }
  m_finished = true;
}

double Progress::elapsed_s(Clock::time_point now) const {
  return std::chrono::duration<double>(now - m_start).count();
}

int Progress::steps_at_mark(int mark) const {
  // Smallest step count with steps / total >= mark / kMarks, in integers to avoid rounding.
  const long long total = m_total_steps;
  return static_cast<int>((total * mark + kMarks - 1) / kMarks);
}

double Progress::seconds_per_step(Clock::time_point now) const {
  const int timed = m_steps_done - m_base_steps;
  if (!m_has_base || timed <= 0) return 0;
  const double seconds = std::chrono::duration<double>(now - m_base_time).count();
  return seconds > 0 ? seconds / timed : 0;
}

std::string Progress::timing_text(Clock::time_point now, const char* separator) const {
  const double per_step = seconds_per_step(now);
  std::string text = "elapsed " + format_duration(elapsed_s(now));
  text += separator;
  text += "eta ";
  if (m_steps_done == m_total_steps)
    text += format_duration(0.0);
  else if (per_step > 0)
    text += format_duration(per_step * (m_total_steps - m_steps_done));
  else
    text += "?";
  text += separator;
  if (per_step > 0)
    text += format_rate(m_points_per_step / per_step * 1e-6);
  else
    text += "?";
  text += " Mpoints/s";
  return text;
}

std::string Progress::survey_text(Clock::time_point now, const char* separator) const {
  if (!m_in_survey) return "";
  std::string text = separator;
  text += "shot " + std::to_string(m_survey.shot) + separator +
          std::to_string(m_survey.shots_done) + "/" + std::to_string(m_survey.shots_total) +
          " done" + separator + "survey eta ";
  // This shot's time, projected from its own progress, stands in for the mean until one finished.
  const double per_step = seconds_per_step(now);
  double shot_total = m_survey.mean_shot_s;
  if (per_step > 0 || m_steps_done == m_total_steps) {
    const double left = per_step * (m_total_steps - m_steps_done);
    if (shot_total <= 0.0) shot_total = elapsed_s(now) + left;
    text += format_duration(left + m_survey.shots_left_after * shot_total);
  } else if (shot_total > 0.0) {
    text += format_duration(shot_total * (m_survey.shots_left_after + 1));
  } else {
    text += "?";
  }
  return text;
}

void Progress::draw_terminal_line(Clock::time_point now) {
  const double fraction =
      m_total_steps > 0 ? static_cast<double>(m_steps_done) / m_total_steps : 1.0;
  const int filled = static_cast<int>(fraction * kBarWidth);
  std::string bar(static_cast<std::size_t>(kBarWidth), ' ');
  std::fill_n(bar.begin(), filled, '=');
  if (filled < kBarWidth) bar[static_cast<std::size_t>(filled)] = '>';

  char head[96];
  std::snprintf(head, sizeof head, "[%s] %3d%% %d/%d  ", bar.c_str(),
                static_cast<int>(fraction * 100.0), m_steps_done, m_total_steps);
  // \r returns to the line start, \033[K erases what a longer previous line left behind.
  *m_out << '\r' << head << timing_text(now, "  ") << survey_text(now, "  ") << "\033[K"
         << std::flush;
  m_last_draw = now;
  m_drawn = true;
}

void Progress::write_log_line(Clock::time_point now) {
  const int percent =
      m_total_steps > 0 ? static_cast<int>(100LL * m_steps_done / m_total_steps) : 100;
  char head[64];
  std::snprintf(head, sizeof head, "step %d/%d (%d%%) ", m_steps_done, m_total_steps, percent);
  *m_out << local_timestamp() << head << timing_text(now, ", ") << survey_text(now, ", ") << '\n'
         << std::flush;
  m_last_logged_steps = m_steps_done;
}

} // namespace minimod
