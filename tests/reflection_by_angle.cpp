/// reflection_by_angle [WIDTH ...]: the table of the absorbing layer's reflection by angle, both
/// formulations (tests/reflection_harness.hpp). Default widths: 10 16 20 30.
#include "reflection_harness.hpp"

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  try {
    std::vector<int> widths;
    for (int n = 1; n < argc; ++n) {
      std::size_t used = 0;
      const int w = std::stoi(argv[n], &used);
      if (used != std::string(argv[n]).size() || w < 1 || w > 60) {
        std::fprintf(stderr, "reflection_by_angle: width '%s': allowed: an integer 1..60\n",
                     argv[n]);
        return 2;
      }
      widths.push_back(w);
    }
    if (widths.empty()) widths = {10, 16, 20, 30};
    std::fputs(minimod::reflection_table(widths).c_str(), stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reflection_by_angle: %s\n", e.what());
    return 1;
  }
}
