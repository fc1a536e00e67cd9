// Static SVG charts for `iotape compare`, in the style of storage reviews.
// The output depends only on the input (fixed layout, fixed number formats,
// no fonts or scripts from anywhere), so the same results give the same bytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace iotape::analysis {

// Colour of the i-th drive: the Okabe-Ito palette (distinguishable with
// colour-blindness), cycling. Lines also take their dash pattern from the
// colour index, so a drive looks the same on every chart of a page.
std::string series_colour(size_t i);
// Text safe inside SVG/HTML element content and attribute values.
std::string xml_escape(const std::string& text);
// The start of an HTML page of charts, up to and including <body>: the look
// every iotape page shares (compare, review). `title` is plain text.
std::string html_page_head(const std::string& title);
// A chart in the page: <figure id="ID">SVG</figure>.
std::string html_figure(const std::string& id, const std::string& svg);
// 1, 2 or 5 times a power of ten, at least `raw`: a step between ticks.
double nice_step(double raw);
// A value with 3 significant digits at most ("1234", "12.3", "0.123").
std::string short_number(double v);

// Horizontal bars, one per drive, grouped by workload; within a group the
// best value comes first and every bar has its value printed at its end.
struct BarChart {
  struct Bar {
    Bar(std::string label_, double value_, size_t colour_ = 0, std::string note_ = {})
        : label(std::move(label_)), value(value_), colour(colour_), note(std::move(note_)) {}
    std::string label;
    double value = 0;   // NaN: no value, shown as "n/a" and sorted last
    size_t colour = 0;  // index for series_colour
    std::string note;   // printed after the value (a ratio: "0.43x"); empty: none
  };
  struct Group {
    std::string title;  // workload; empty = no group heading
    std::vector<Bar> bars;
  };
  std::string title;
  std::string unit;            // printed after values and in the subtitle
  bool higher_is_better = true;
  std::vector<Group> groups;
};
std::string bar_chart_svg(const BarChart& chart);

// Pairs of bars (TechReport's fresh vs used): per group (a test), each drive's
// first bar (solid) above its second (pale, the same colour), and beside the
// pair the drop from the first to the second in percent, as given. Pairs keep
// their order; a NaN value is drawn as "n/a".
struct PairedBarChart {
  struct Pair {
    std::string label;   // the drive
    double first = 0, second = 0;
    double drop_pct = 0;
    size_t colour = 0;
  };
  struct Group {
    std::string title;
    std::vector<Pair> pairs;
  };
  std::string title;
  std::string unit;
  bool higher_is_better = true;
  std::string first_name = "fresh", second_name = "used";  // after the drive's label
  std::vector<Group> groups;
};
std::string paired_bar_chart_svg(const PairedBarChart& chart);

// Lines over time (IOPS per interval), one per drive. Value k is drawn at the
// middle of its interval, (k + 0.5) * x_step; a line of one value is a dot,
// and a NaN value a gap in the line.
struct LineChart {
  struct Line {
    std::string label;
    double x_step = 1;  // x distance between consecutive values, in x_unit
    std::vector<double> values;
    size_t colour = 0;
  };
  std::string title;
  std::string x_unit;
  std::string y_unit;
  // An x range shaded behind the lines (a window of the trace), labelled at its
  // top.
  struct Band {
    double from = 0, to = 0;  // in x_unit
    std::string label;
    size_t colour = 0;
  };
  std::vector<Line> lines;
  bool log_y = false;  // decades; values below the lowest decade sit on the axis
  std::vector<Band> bands = {};
};
std::string line_chart_svg(const LineChart& chart);

// A grid of cells shaded by value from white to dark blue (a heatmap, a
// density map): rows top to bottom, columns left to right; each row and
// every labelled column named beside the grid. With print_values each cell
// shows its value to one decimal (none below 0.05); with log_scale the shade
// follows log10(1 + value), so sparse cells stay visible next to dense ones.
struct GridChart {
  std::string title;
  std::string subtitle;                    // what a cell is, the unit
  std::vector<std::string> row_labels;     // one per row; "" = none
  std::vector<std::string> column_labels;  // one per column; "" = none
  std::vector<std::vector<double>> cells;  // [row][column], >= 0
  bool print_values = false;
  bool log_scale = false;
  int cell_height = 22;
};
std::string grid_chart_svg(const GridChart& chart);

// A figure against a parameter (IOPS against queue depth, ...): one line per
// drive through its points, every point marked.
struct XyChart {
  enum class XFormat { kNumber, kSize, kPercent };  // tick labels: "16", "4K", "30%"
  struct Line {
    std::string label;
    std::vector<std::pair<double, double>> points;  // (x, y), x increasing
    size_t colour = 0;
  };
  std::string title;
  std::string x_label;
  std::string y_unit;           // printed in the subtitle with "higher/lower is better"
  bool higher_is_better = true;
  bool log2_x = false;          // x values > 0, ticks at powers of two
  XFormat x_format = XFormat::kNumber;
  std::vector<Line> lines;
};
std::string xy_chart_svg(const XyChart& chart);
// An x value as the chart's ticks show it.
std::string x_label(double x, XyChart::XFormat format);

}  // namespace iotape::analysis
