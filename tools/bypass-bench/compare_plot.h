// `bypass-bench compare --plot OUT.svg`: two panels side by side — every case's latency CDF on a
// log-scale microsecond axis, and its messages/s second by second — with a shared legend.
#pragma once

#include <string>
#include <vector>

#include "tools/bypass-bench/compare.h"

namespace bypass::bench {

// The SVG document for `columns`: one <path class="cdf"> and one <path class="rate"> per case
// (data-case = the column label); a case without samples gets no rate path, and the legend says so.
std::string comparison_plot_svg(const std::vector<CompareColumn>& columns);

// Writes comparison_plot_svg to `path`; false with `*error` naming the file on failure.
bool write_comparison_plot(const std::vector<CompareColumn>& columns, const std::string& path, std::string* error);

}  // namespace bypass::bench
