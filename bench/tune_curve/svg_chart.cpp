// Plain SVG line chart (see svg_chart.h).
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
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else o += c;
  }
  return o;
}

// A "nice" tick step giving about `n` ticks over [0, hi].
double tick_step(double hi, int n) {
  double raw = hi / n, mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

} // namespace

std::string to_svg(const Chart& c, int width, int height) {
  const double left = 70, right = 190, top = 40, bottom = 55;
  double xmax = 1, ymax = 1;
  for (const auto& s : c.series)
    for (auto [x, y] : s.points) {
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
    }
  for (const auto& l : c.lines)
    ymax = std::max(ymax, l.y);
  ymax *= 1.08;
  const double pw = width - left - right, ph = height - top - bottom;
  auto X = [&](double x) { return left + pw * x / xmax; };
  auto Y = [&](double y) { return top + ph * (1 - y / ymax); };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
    << esc(c.title) << "</text>\n";
  for (double t = 0; t <= xmax + 1e-9; t += tick_step(xmax, 8))
    o << "<line x1=\"" << X(t) << "\" y1=\"" << top << "\" x2=\"" << X(t) << "\" y2=\""
      << top + ph << "\" stroke=\"#eee\"/><text x=\"" << X(t) << "\" y=\"" << top + ph + 16
      << "\" text-anchor=\"middle\">" << num(t) << "</text>\n";
  for (double t = 0; t <= ymax + 1e-9; t += tick_step(ymax, 6))
    o << "<line x1=\"" << left << "\" y1=\"" << Y(t) << "\" x2=\"" << left + pw << "\" y2=\""
      << Y(t) << "\" stroke=\"#eee\"/><text x=\"" << left - 6 << "\" y=\"" << Y(t) + 4
      << "\" text-anchor=\"end\">" << num(t) << "</text>\n";
  o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#333\"/>\n"
    << "<text x=\"" << left + pw / 2 << "\" y=\"" << height - 12 << "\" text-anchor=\"middle\">"
    << esc(c.x_label) << "</text>\n"
    << "<text transform=\"translate(18," << top + ph / 2
    << ") rotate(-90)\" text-anchor=\"middle\">" << esc(c.y_label) << "</text>\n";
  double ly = top + 10;
  for (const auto& l : c.lines) {
    o << "<line x1=\"" << left << "\" y1=\"" << Y(l.y) << "\" x2=\"" << left + pw << "\" y2=\""
      << Y(l.y) << "\" stroke=\"" << l.color << "\" stroke-dasharray=\"6,4\"/>\n"
      << "<line x1=\"" << left + pw + 10 << "\" y1=\"" << ly << "\" x2=\"" << left + pw + 30
      << "\" y2=\"" << ly << "\" stroke=\"" << l.color << "\" stroke-dasharray=\"6,4\"/>"
      << "<text x=\"" << left + pw + 35 << "\" y=\"" << ly + 4 << "\">" << esc(l.label)
      << "</text>\n";
    ly += 18;
  }
  for (const auto& s : c.series) {
    o << "<polyline fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"2\" points=\"";
    for (auto [x, y] : s.points)
      o << X(x) << "," << Y(y) << " ";
    o << "\"/>\n<line x1=\"" << left + pw + 10 << "\" y1=\"" << ly << "\" x2=\"" << left + pw + 30
      << "\" y2=\"" << ly << "\" stroke=\"" << s.color << "\" stroke-width=\"2\"/><text x=\""
      << left + pw + 35 << "\" y=\"" << ly + 4 << "\">" << esc(s.label) << "</text>\n";
    ly += 18;
  }
  o << "</svg>\n";
  return o.str();
}

} // namespace mt::bench
