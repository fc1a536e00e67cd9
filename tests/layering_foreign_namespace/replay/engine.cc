// A replay file that defines a function in the analysis namespace:
// check_layers.py must reject it, though no include crosses a layer.
namespace iotape::analysis {
int busy_percent(int busy, int total) { return 100 * busy / total; }
}  // namespace iotape::analysis
