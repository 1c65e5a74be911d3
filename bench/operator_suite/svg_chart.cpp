// The SVG bar chart of the operator suite.
#include "svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace mt::bench {

namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else
      o += c;
  }
  return o;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
  return buf;
}

} // namespace

std::string grouped_bar_chart_svg(const std::string& title, const std::string& y_label,
                                  const std::vector<std::string>& groups,
                                  const std::vector<ChartSeries>& series) {
  double lo = INFINITY, hi = 0;
  for (const auto& s : series)
    for (double v : s.values)
      if (v > 0) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  if (!(hi > 0)) lo = hi = 1;
  const int e_lo = static_cast<int>(std::floor(std::log10(lo)));
  const int e_hi = std::max(e_lo + 1, static_cast<int>(std::ceil(std::log10(hi))));
  const double bar_w = 14, gap = 18, left = 70, top = 50, plot_h = 320, bottom = 120;
  const double group_w = bar_w * static_cast<double>(series.size()) + gap;
  const double width = left + group_w * static_cast<double>(groups.size()) + 20;
  const double height = top + plot_h + bottom;
  auto y_of = [&](double v) {
    double t = (std::log10(v) - e_lo) / (e_hi - e_lo);
    return top + plot_h * (1 - t);
  };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
    << esc(title) << "</text>\n";
  for (int e = e_lo; e <= e_hi; ++e) {
    double y = y_of(std::pow(10.0, e));
    o << "<line x1=\"" << left << "\" x2=\"" << width - 20 << "\" y1=\"" << y << "\" y2=\"" << y
      << "\" stroke=\"#ddd\"/>\n";
    o << "<text x=\"" << left - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">"
      << num(std::pow(10.0, e)) << "</text>\n";
  }
  o << "<text transform=\"translate(16," << top + plot_h / 2
    << ") rotate(-90)\" text-anchor=\"middle\">" << esc(y_label) << " (log scale)</text>\n";
  for (size_t g = 0; g < groups.size(); ++g) {
    double x0 = left + gap / 2 + group_w * static_cast<double>(g);
    for (size_t s = 0; s < series.size(); ++s) {
      double v = g < series[s].values.size() ? series[s].values[g] : 0;
      if (!(v > 0)) continue;
      double x = x0 + bar_w * static_cast<double>(s), y = y_of(std::max(v, std::pow(10.0, e_lo)));
      o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << bar_w - 1 << "\" height=\""
        << top + plot_h - y << "\" fill=\"" << series[s].color << "\"><title>"
        << esc(series[s].name + " " + groups[g] + ": " + num(v)) << "</title></rect>\n";
    }
    double xc = x0 + bar_w * static_cast<double>(series.size()) / 2;
    o << "<text transform=\"translate(" << xc << "," << top + plot_h + 10
      << ") rotate(50)\" text-anchor=\"start\">" << esc(groups[g]) << "</text>\n";
  }
  o << "<line x1=\"" << left << "\" x2=\"" << width - 20 << "\" y1=\"" << top + plot_h << "\" y2=\""
    << top + plot_h << "\" stroke=\"black\"/>\n";
  double lx = left;
  for (const auto& s : series) {
    o << "<rect x=\"" << lx << "\" y=\"32\" width=\"10\" height=\"10\" fill=\"" << s.color
      << "\"/><text x=\"" << lx + 14 << "\" y=\"41\">" << esc(s.name) << "</text>\n";
    lx += 24 + 7 * static_cast<double>(s.name.size());
  }
  o << "</svg>\n";
  return o.str();
}

} // namespace mt::bench
