#include "analysis/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "units/units.h"

namespace iotape::analysis {

namespace {

constexpr int kWidth = 960;
constexpr int kLabelWidth = 260;   // drive names left of the bars
constexpr int kValueRoom = 110;    // right of the longest bar, for its value
constexpr int kBarHeight = 22;
constexpr int kBarGap = 6;
constexpr const char* kFont = "font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\"";

// Rough width of text at 13 px in a sans-serif font, to shorten long labels.
std::string fit(const std::string& label, int pixels) {
  const size_t max_chars = static_cast<size_t>(pixels / 7);
  if (label.size() <= max_chars) return label;
  size_t cut = max_chars - 1;
  while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return label.substr(0, cut) + "\xe2\x80\xa6";  // an ellipsis
}

}  // namespace

double nice_step(double raw) {
  if (raw <= 0) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

namespace {

std::string svg_open(int height, const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" {2} "
      "font-size=\"13\" role=\"img\" aria-label=\"{3}\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n",
      kWidth, height, kFont, xml_escape(title));
}

constexpr const char* kDash[] = {"", "6 3", "2 2", "8 3 2 3"};  // tells lines apart in grey print

// The i-th entry of the legend below a plot: a line sample (the colour's
// dash) and the label, three per row.
std::string legend_entry(size_t i, const std::string& label, size_t colour, int top);

}  // namespace

std::string series_colour(size_t i) {
  static constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                             "#CC79A7", "#56B4E9", "#000000", "#999999"};
  return kPalette[i % std::size(kPalette)];
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string html_page_head(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + xml_escape(title) +
         "</title>\n"
         "<style>\n"
         "body { font-family: \"DejaVu Sans\", Arial, Helvetica, sans-serif; margin: 24px; color: #111111; "
         "max-width: 980px; }\n"
         "table { border-collapse: collapse; font-size: 13px; margin-bottom: 24px; }\n"
         "th, td { border: 1px solid #cccccc; padding: 4px 8px; text-align: right; white-space: nowrap; }\n"
         "th:nth-child(-n+2), td:nth-child(-n+2) { text-align: left; }\n"
         "figure { margin: 0 0 24px 0; break-inside: avoid; page-break-inside: avoid; }\n"
         "svg { max-width: 100%; height: auto; }\n"
         "p.note { font-size: 12px; color: #444444; }\n"
         "</style>\n</head>\n<body>\n";
}

std::string html_figure(const std::string& id, const std::string& svg) {
  return "<figure id=\"" + xml_escape(id) + "\">\n" + svg + "</figure>\n";
}

std::string short_number(double v) {
  const double a = std::fabs(v);
  if (a >= 100 || a == 0) return fmt::format("{:.0f}", v);
  if (a >= 10) return fmt::format("{:.1f}", v);
  if (a >= 1) return fmt::format("{:.2f}", v);
  // Three significant digits, trailing zeros kept so values line up ("0.160").
  return fmt::format("{:.{}f}", v, std::min(12, 2 - static_cast<int>(std::floor(std::log10(a)))));
}

std::string bar_chart_svg(const BarChart& chart) {
  double max_value = 0;
  size_t rows = 0;
  for (const auto& g : chart.groups) {
    rows += g.bars.size() + (g.title.empty() ? 0 : 1);
    for (const auto& b : g.bars)
      if (!std::isnan(b.value)) max_value = std::max(max_value, b.value);
  }
  size_t note_chars = 0;  // room for the longest note, beside the value
  for (const auto& g : chart.groups)
    for (const auto& b : g.bars) note_chars = std::max(note_chars, b.note.size());
  const int value_room = kValueRoom + static_cast<int>(note_chars) * 7;
  const int top = 58;
  const int height = top + static_cast<int>(rows) * (kBarHeight + kBarGap) + 16;
  const double scale = max_value > 0 ? (kWidth - kLabelWidth - value_room) / max_value : 0;

  std::string s = svg_open(height, chart.title);
  s += fmt::format("<text x=\"12\" y=\"24\" font-size=\"17\" font-weight=\"bold\">{}</text>\n", xml_escape(chart.title));
  s += fmt::format("<text x=\"12\" y=\"44\" fill=\"#444444\">{} \xe2\x80\x94 {} is better</text>\n",
                   xml_escape(chart.unit), chart.higher_is_better ? "higher" : "lower");
  int y = top;
  for (const auto& g : chart.groups) {
    if (!g.title.empty()) {
      s += fmt::format("<text x=\"12\" y=\"{}\" font-weight=\"bold\">{}</text>\n", y + 16, xml_escape(fit(g.title, kWidth - 24)));
      y += kBarHeight + kBarGap;
    }
    std::vector<BarChart::Bar> bars = g.bars;
    std::stable_sort(bars.begin(), bars.end(), [&](const auto& a, const auto& b) {
      if (std::isnan(a.value) || std::isnan(b.value)) return !std::isnan(a.value) && std::isnan(b.value);
      return chart.higher_is_better ? a.value > b.value : a.value < b.value;
    });
    for (const auto& b : bars) {
      s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLabelWidth - 8, y + 16,
                       xml_escape(fit(b.label, kLabelWidth - 20)));
      if (std::isnan(b.value)) {
        s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#666666\">n/a (no completion times)</text>\n", kLabelWidth + 6,
                         y + 16);
        y += kBarHeight + kBarGap;
        continue;
      }
      const double w = std::max(1.0, b.value * scale);
      s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>\n", kLabelWidth, y, w,
                       kBarHeight, series_colour(b.colour));
      s += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{} {}{}</text>\n", kLabelWidth + w + 6, y + 16,
                       short_number(b.value), xml_escape(chart.unit),
                       b.note.empty() ? "" : "  <tspan font-weight=\"bold\">" + xml_escape(b.note) + "</tspan>");
      y += kBarHeight + kBarGap;
    }
  }
  s += "</svg>\n";
  return s;
}

std::string paired_bar_chart_svg(const PairedBarChart& chart) {
  constexpr int kDropRoom = 110;  // right of the values, for the drop
  double max_value = 0;
  size_t rows = 0;
  for (const auto& g : chart.groups) {
    rows += 2 * g.pairs.size() + (g.title.empty() ? 0 : 1);
    for (const auto& p : g.pairs)
      for (double v : {p.first, p.second})
        if (!std::isnan(v)) max_value = std::max(max_value, v);
  }
  const int top = 58;
  const int height = top + static_cast<int>(rows) * (kBarHeight + kBarGap) + 16;
  const double scale = max_value > 0 ? (kWidth - kLabelWidth - kValueRoom - kDropRoom) / max_value : 0;

  std::string s = svg_open(height, chart.title);
  s += fmt::format("<text x=\"12\" y=\"24\" font-size=\"17\" font-weight=\"bold\">{}</text>\n", xml_escape(chart.title));
  s += fmt::format("<text x=\"12\" y=\"44\" fill=\"#444444\">{} \xe2\x80\x94 {} is better; solid {}, pale {}; "
                   "the drop in % beside each pair</text>\n",
                   xml_escape(chart.unit), chart.higher_is_better ? "higher" : "lower", xml_escape(chart.first_name),
                   xml_escape(chart.second_name));
  int y = top;
  for (const auto& g : chart.groups) {
    if (!g.title.empty()) {
      s += fmt::format("<text x=\"12\" y=\"{}\" font-weight=\"bold\">{}</text>\n", y + 16, xml_escape(fit(g.title, kWidth - 24)));
      y += kBarHeight + kBarGap;
    }
    for (const auto& p : g.pairs) {
      const int pair_top = y;
      for (const auto& [value, name, opacity] : {std::tuple{p.first, &chart.first_name, "1"},
                                                 std::tuple{p.second, &chart.second_name, "0.45"}}) {
        s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLabelWidth - 8, y + 16,
                         xml_escape(fit(p.label + " " + *name, kLabelWidth - 20)));
        if (std::isnan(value)) {
          s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#666666\">n/a</text>\n", kLabelWidth + 6, y + 16);
        } else {
          const double w = std::max(1.0, value * scale);
          s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" fill-opacity=\"{}\" "
                           "stroke=\"{}\"/>\n",
                           kLabelWidth, y, w, kBarHeight, series_colour(p.colour), opacity, series_colour(p.colour));
          s += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{} {}</text>\n", kLabelWidth + w + 6, y + 16,
                           short_number(value), xml_escape(chart.unit));
        }
        y += kBarHeight + kBarGap;
      }
      s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-weight=\"bold\">{}</text>\n", kWidth - 12,
                       pair_top + kBarHeight + kBarGap / 2 + 5,
                       std::isnan(p.drop_pct) ? std::string("drop n/a") : fmt::format("drop {:.1f}%", p.drop_pct));
    }
  }
  s += "</svg>\n";
  return s;
}

std::string line_chart_svg(const LineChart& chart) {
  constexpr int kLeft = 80, kRight = 24, kTop = 48, kPlotHeight = 260;
  const int legend_rows = static_cast<int>((chart.lines.size() + 2) / 3);
  const int height = kTop + kPlotHeight + 50 + legend_rows * 20 + 10;
  double max_x = 0, max_y = 0;
  for (const auto& l : chart.lines) {
    max_x = std::max(max_x, l.x_step * static_cast<double>(l.values.size()));
    for (double v : l.values) max_y = std::max(max_y, v);
  }
  const double x_step = nice_step(max_x / 8), y_step = nice_step(max_y / 5);
  const double x_max = std::max(x_step, std::ceil(max_x / x_step) * x_step);
  const double y_max = std::max(y_step, std::ceil(max_y / y_step) * y_step);
  const double plot_w = kWidth - kLeft - kRight;
  auto px = [&](double x) { return kLeft + x / x_max * plot_w; };
  // Log scale: whole decades from the lowest positive value to the highest.
  double min_pos = max_y;
  for (const auto& l : chart.lines)
    for (double v : l.values)
      if (v > 0) min_pos = std::min(min_pos, v);
  const double lo_exp = std::floor(std::log10(std::max(min_pos, 1.0)));
  const double hi_exp = std::max(lo_exp + 1, std::ceil(std::log10(std::max(max_y, 1.0))));
  auto py = [&](double y) {
    const double share = chart.log_y ? (std::log10(std::max(y, std::pow(10.0, lo_exp))) - lo_exp) / (hi_exp - lo_exp)
                                     : y / y_max;
    return kTop + kPlotHeight - share * kPlotHeight;
  };
  std::vector<double> y_ticks;
  if (chart.log_y)
    for (double e = lo_exp; e <= hi_exp; ++e) y_ticks.push_back(std::pow(10.0, e));
  else
    for (double y = 0; y <= y_max + y_step / 2; y += y_step) y_ticks.push_back(y);

  std::string s = svg_open(height, chart.title);
  s += fmt::format("<text x=\"12\" y=\"24\" font-size=\"17\" font-weight=\"bold\">{}</text>\n", xml_escape(chart.title));
  for (double y : y_ticks) {
    s += fmt::format("<line x1=\"{}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#dddddd\"/>\n", kLeft,
                     kLeft + plot_w, py(y), py(y));
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 6, py(y) + 4, short_number(y));
  }
  // Ticks are 1, 2 or 5 times a power of ten: printed plainly ("0.5", "12").
  for (double x = 0; x <= x_max + x_step / 2; x += x_step)
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:g}</text>\n", px(x), kTop + kPlotHeight + 18,
                     x);
  s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#444444\">{}</text>\n", kLeft + plot_w / 2,
                   kTop + kPlotHeight + 36, xml_escape(chart.x_unit));
  s += fmt::format("<text x=\"12\" y=\"{}\" fill=\"#444444\">{}</text>\n", kTop - 10, xml_escape(chart.y_unit));
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"none\" stroke=\"#888888\"/>\n", kLeft,
                   kTop, plot_w, kPlotHeight);
  for (const auto& b : chart.bands) {
    const double x0 = px(b.from), w = std::max(2.0, px(b.to) - x0);
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" fill-opacity=\"0.25\"/>\n",
                     x0, kTop, w, kPlotHeight, series_colour(b.colour));
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" fill=\"{}\">{}</text>\n", x0 + 2, kTop + 12,
                     series_colour(b.colour), xml_escape(b.label));
  }
  for (size_t i = 0; i < chart.lines.size(); ++i) {
    const auto& l = chart.lines[i];
    const char* dash = kDash[l.colour % std::size(kDash)];
    // A NaN value is a gap: the line stops before it and starts again after.
    // A run of one value draws nothing as a polyline: it is a dot.
    for (size_t k = 0; k < l.values.size();) {
      const size_t first = k;
      std::string points;
      for (; k < l.values.size() && !std::isnan(l.values[k]); ++k)
        points += fmt::format("{}{:.1f},{:.1f}", points.empty() ? "" : " ",
                              px((static_cast<double>(k) + 0.5) * l.x_step), py(l.values[k]));
      if (k - first == 1)
        s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\"/>\n",
                         px((static_cast<double>(first) + 0.5) * l.x_step), py(l.values[first]),
                         l.values.size() == 1 ? 3.5 : 2.0, series_colour(l.colour));
      else if (k > first)
        s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\"{} points=\"{}\"/>\n",
                         series_colour(l.colour), *dash ? fmt::format(" stroke-dasharray=\"{}\"", dash) : "", points);
      while (k < l.values.size() && std::isnan(l.values[k])) ++k;
    }
    s += legend_entry(i, l.label, l.colour, kTop + kPlotHeight + 60);
  }
  s += "</svg>\n";
  return s;
}

namespace {

// White to dark blue by share (0..1).
std::string shade(double share) {
  share = std::clamp(share, 0.0, 1.0);
  auto mix = [&](int from, int to) { return static_cast<int>(std::lround(from + (to - from) * share)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(255, 8), mix(255, 48), mix(255, 107));
}

}  // namespace

std::string grid_chart_svg(const GridChart& chart) {
  constexpr int kLeft = 96, kRight = 24, kTop = 58;
  const size_t rows = chart.cells.size(), columns = rows ? chart.cells[0].size() : 0;
  const double cell_w = columns ? static_cast<double>(kWidth - kLeft - kRight) / static_cast<double>(columns) : 0;
  const int plot_h = static_cast<int>(rows) * chart.cell_height;
  const int height = kTop + plot_h + 34;
  double max_v = 0;
  for (const auto& row : chart.cells)
    for (double v : row) max_v = std::max(max_v, v);
  auto share = [&](double v) {
    if (max_v <= 0) return 0.0;
    return chart.log_scale ? std::log10(1 + v) / std::log10(1 + max_v) : v / max_v;
  };
  std::string s = svg_open(height, chart.title);
  s +=
      fmt::format("<text x=\"12\" y=\"24\" font-size=\"17\" font-weight=\"bold\">{}</text>\n", xml_escape(chart.title));
  s += fmt::format("<text x=\"12\" y=\"44\" fill=\"#444444\">{}</text>\n", xml_escape(chart.subtitle));
  for (size_t r = 0; r < rows; ++r) {
    const int y = kTop + static_cast<int>(r) * chart.cell_height;
    if (r < chart.row_labels.size() && !chart.row_labels[r].empty())
      s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"11\">{}</text>\n", kLeft - 6,
                       y + chart.cell_height / 2 + 4, xml_escape(chart.row_labels[r]));
    for (size_t c = 0; c < columns; ++c) {
      const double v = chart.cells[r][c];
      if (v <= 0) continue;
      // Whole pixels, so neighbouring cells meet without a seam.
      const double x = kLeft + static_cast<double>(c) * cell_w;
      const long x0 = std::lround(x), x1 = std::lround(x + cell_w);
      s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n", x0, y, x1 - x0,
                       chart.cell_height, shade(share(v)));
      if (chart.print_values)
        s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\" fill=\"{}\">{}</text>\n",
                         x + cell_w / 2, y + chart.cell_height / 2 + 4, share(v) > 0.5 ? "#ffffff" : "#111111",
                         v < 0.05 ? std::string() : fmt::format("{:.{}f}", v, v < 99.95 ? 1 : 0));
    }
  }
  for (size_t c = 0; c < columns && c < chart.column_labels.size(); ++c)
    if (!chart.column_labels[c].empty())
      s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\">{}</text>\n",
                       kLeft + (static_cast<double>(c) + 0.5) * cell_w, kTop + plot_h + 16,
                       xml_escape(chart.column_labels[c]));
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888888\"/>\n", kLeft,
                   kTop, kWidth - kLeft - kRight, plot_h);
  s += "</svg>\n";
  return s;
}

std::string x_label(double x, XyChart::XFormat format) {
  switch (format) {
    case XyChart::XFormat::kSize: return units::format_size(static_cast<uint64_t>(std::llround(x)));
    case XyChart::XFormat::kPercent: return fmt::format("{:g}%", x);
    case XyChart::XFormat::kNumber: break;
  }
  return fmt::format("{:g}", x);
}

std::string xy_chart_svg(const XyChart& chart) {
  constexpr int kLeft = 80, kRight = 24, kTop = 64, kPlotHeight = 260;
  const int legend_rows = static_cast<int>((chart.lines.size() + 2) / 3);
  const int height = kTop + kPlotHeight + 50 + legend_rows * 20 + 10;
  double min_x = INFINITY, max_x = -INFINITY, max_y = 0;
  for (const auto& l : chart.lines)
    for (const auto& [x, y] : l.points) {
      min_x = std::min(min_x, x);
      max_x = std::max(max_x, x);
      if (!std::isnan(y)) max_y = std::max(max_y, y);
    }
  if (!(min_x <= max_x)) min_x = max_x = 0;
  // x: whole powers of two (log2) or 0..max in nice steps; y: 0..max in nice steps.
  std::vector<double> x_ticks;
  double x_lo = 0, x_hi = 1;
  auto xv = [&](double x) { return chart.log2_x ? std::log2(std::max(x, 1e-9)) : x; };
  if (chart.log2_x) {
    x_lo = std::floor(std::log2(std::max(min_x, 1e-9)));
    x_hi = std::max(x_lo + 1, std::ceil(std::log2(std::max(max_x, 1e-9))));
    const double every = std::ceil((x_hi - x_lo) / 12);  // at most 12 labels
    for (double e = x_lo; e <= x_hi; e += every) x_ticks.push_back(std::pow(2.0, e));
  } else {
    const double step = nice_step(std::max(max_x, 1.0) / 10);
    x_hi = std::max(step, std::ceil(max_x / step) * step);
    for (double x = 0; x <= x_hi + step / 2; x += step) x_ticks.push_back(x);
  }
  const double y_step = nice_step(max_y / 5);
  const double y_max = std::max(y_step, std::ceil(max_y / y_step) * y_step);
  const double plot_w = kWidth - kLeft - kRight;
  // A margin inside the frame, so the first and last points are not on it.
  auto px = [&](double x) { return kLeft + 12 + (xv(x) - x_lo) / (x_hi - x_lo) * (plot_w - 24); };
  auto py = [&](double y) { return kTop + kPlotHeight - y / y_max * kPlotHeight; };

  std::string s = svg_open(height, chart.title);
  s += fmt::format("<text x=\"12\" y=\"24\" font-size=\"17\" font-weight=\"bold\">{}</text>\n", xml_escape(chart.title));
  s += fmt::format("<text x=\"12\" y=\"44\" fill=\"#444444\">{} \xe2\x80\x94 {} is better</text>\n",
                   xml_escape(chart.y_unit), chart.higher_is_better ? "higher" : "lower");
  for (double y = 0; y <= y_max + y_step / 2; y += y_step) {
    s += fmt::format("<line x1=\"{}\" x2=\"{:.1f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#dddddd\"/>\n", kLeft,
                     kLeft + plot_w, py(y), py(y));
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 6, py(y) + 4, short_number(y));
  }
  for (double x : x_ticks) {
    s += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#eeeeee\"/>\n", px(x), kTop,
                     kTop + kPlotHeight);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(x), kTop + kPlotHeight + 18,
                     xml_escape(x_label(x, chart.x_format)));
  }
  s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#444444\">{}</text>\n", kLeft + plot_w / 2,
                   kTop + kPlotHeight + 36, xml_escape(chart.x_label + (chart.log2_x ? " (log2 scale)" : "")));
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"none\" stroke=\"#888888\"/>\n", kLeft,
                   kTop, plot_w, kPlotHeight);
  for (size_t i = 0; i < chart.lines.size(); ++i) {
    const auto& l = chart.lines[i];
    const std::string colour = series_colour(l.colour);
    std::string points, marks;
    for (const auto& [x, y] : l.points) {
      if (std::isnan(y)) continue;
      points += fmt::format("{}{:.1f},{:.1f}", points.empty() ? "" : " ", px(x), py(y));
      marks += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"><title>{}: {} {}</title></circle>\n",
                           px(x), py(y), colour, xml_escape(l.label + ", " + x_label(x, chart.x_format)),
                           short_number(y), xml_escape(chart.y_unit));
    }
    const char* dash = kDash[l.colour % std::size(kDash)];
    s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\"{} points=\"{}\"/>\n", colour,
                     *dash ? fmt::format(" stroke-dasharray=\"{}\"", dash) : "", points);
    s += marks;
    s += legend_entry(i, l.label, l.colour, kTop + kPlotHeight + 60);
  }
  s += "</svg>\n";
  return s;
}

namespace {

std::string legend_entry(size_t i, const std::string& label, size_t colour, int top) {
  const char* dash = kDash[colour % std::size(kDash)];
  const int lx = 12 + static_cast<int>(i % 3) * 310, ly = top + static_cast<int>(i / 3) * 20;
  return fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"{}/>\n", lx,
                     lx + 28, ly - 4, ly - 4, series_colour(colour),
                     *dash ? fmt::format(" stroke-dasharray=\"{}\"", dash) : "") +
         fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", lx + 34, ly, xml_escape(fit(label, 270)));
}

}  // namespace

}  // namespace iotape::analysis
