#pragma once
/// Progress report of a time-stepping run on stderr.

#include <chrono>
#include <iostream>
#include <ostream>
#include <string>

namespace minimod {

/// True when stderr is a terminal, i.e. a redrawn progress line will be seen as one line.
bool stderr_is_terminal();

/// How a Progress report is shown.
enum class ProgressStyle {
  kQuiet,    ///< nothing
  kTerminal, ///< one line with a bar, redrawn in place at most ~10 times a second
  kLog,      ///< a plain line at every 5 percent, local date and time first, for logs and pipes
};

/// Where the shot of a Progress report stands in its survey, for the survey-wide line.
struct SurveyPosition {
  int shot = 0;             ///< the shot being modelled (the number of its /shots/NNNN group)
  int shots_done = 0;       ///< shots of the survey complete before this one (resumed ones too)
  int shots_total = 0;      ///< shots of the survey
  int shots_left_after = 0; ///< shots this run still models after this one
  double mean_shot_s = 0;   ///< mean wall time of the shots this run modelled so far; 0: none yet
};

/// Reports the progress of a run of `total_steps` time steps: steps done, elapsed time, the
/// estimated time left and the throughput in Mpoints/s. The rate and the time left are measured
/// from the first update on, so they read "?" until a later update timed a step.
///
/// Not thread-safe; call update() from the thread that drives the time loop.
class Progress {
public:
  /// @param total_steps      steps of the whole run
  /// @param points_per_step  grid points updated per step (for the Mpoints/s figure)
  /// @param quiet            report nothing (wins over is_tty)
  /// @param is_tty           `out` is a terminal: redraw one line; otherwise log plain lines
  /// @param out              where to write; tests pass a std::ostringstream
  Progress(int total_steps, double points_per_step, bool quiet, bool is_tty,
           std::ostream* out = &std::cerr);

  /// Ends a redrawn line that finish() did not end (e.g. when an exception unwinds the run), so
  /// the next message starts on a line of its own.
  ~Progress();

  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Adds the survey to every line: the shot, shots done of the total, and the survey's estimated
  /// time left (this shot's, plus the shots left at the mean shot time, or at this shot's
  /// projected time before any shot finished).
  void set_survey(const SurveyPosition& position);

  /// Records that `steps_done` of the total steps are complete (values only grow; a smaller one
  /// is ignored). Cheap enough to call after every step.
  void update(int steps_done);

  /// Writes the final state: the last redraw and a newline on a terminal, the last line in log
  /// style when it was not written yet. Later calls do nothing.
  void finish();

  /// How this report is shown.
  ProgressStyle style() const { return m_style; }

private:
  using Clock = std::chrono::steady_clock;

  /// Seconds since construction.
  double elapsed_s(Clock::time_point now) const;
  /// "elapsed 3.1 s, eta 12.4 s, 812 Mpoints/s" for the current state.
  std::string timing_text(Clock::time_point now, const char* separator) const;
  /// Seconds a step since the first update; 0 while no step was timed.
  double seconds_per_step(Clock::time_point now) const;
  /// "shot 3, 2/10 done, survey eta 1m10s", or "" without set_survey().
  std::string survey_text(Clock::time_point now, const char* separator) const;
  void draw_terminal_line(Clock::time_point now);
  void write_log_line(Clock::time_point now);
  /// Steps at which the `mark`-th 5 percent is reached (mark 1..20).
  int steps_at_mark(int mark) const;

  static constexpr int kMarks = 20; ///< log a line at every 100 / kMarks percent
  static constexpr int kBarWidth = 30;
  static constexpr std::chrono::milliseconds kRedrawInterval{100};

  std::ostream* m_out;
  ProgressStyle m_style;
  int m_total_steps;
  double m_points_per_step;
  int m_steps_done = 0;
  Clock::time_point m_start;
  Clock::time_point m_last_draw;
  bool m_drawn = false;         ///< a terminal line was drawn and not ended yet
  int m_next_mark = 1;          ///< the next 5 percent mark to log
  int m_last_logged_steps = -1; ///< steps shown by the last log line
  bool m_finished = false;
  bool m_in_survey = false;
  SurveyPosition m_survey;
  /// The first update's steps and time: the rate and the time left are measured from it, over
  /// steps whose time was seen (the first update may come right after construction, with steps
  /// already done: from a near-zero time they would give an absurd rate).
  bool m_has_base = false;
  int m_base_steps = 0;
  Clock::time_point m_base_time;
};

} // namespace minimod
