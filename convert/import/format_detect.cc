#include "convert/import/format_detect.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "convert/import/decompress_stream.h"
#include "convert/import/input.h"
#include "convert/import/text_lines.h"
#include "format/blktrace_layout.h"
#include "format/error.h"

namespace iotape::convert {
namespace {

constexpr size_t kHeadBytes = 64 << 10;
constexpr size_t kLinesJudged = 20;

bool digits(std::string_view s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos; }

// Digits with at most one '.', as decimal times are written.
bool decimal(std::string_view s) {
  const size_t dot = s.find('.');
  if (dot == std::string_view::npos) return digits(s);
  return (dot == 0 || digits(s.substr(0, dot))) && (dot + 1 == s.size() || digits(s.substr(dot + 1))) && s.size() > 1;
}

bool one_of(std::string_view s, std::initializer_list<std::string_view> set) {
  for (auto x : set)
    if (s == x) return true;
  return false;
}

bool is_text(std::string_view head) {
  for (unsigned char c : head)
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t') return false;
  return true;
}

// blkparse's event line: "MAJ,MIN CPU SEQ S.NNNNNNNNN PID ACTION ..."
bool blkparse_line(std::string_view line) {
  std::array<std::string_view, 8> f;
  const size_t n = split_fields(line, ' ', f);
  if (n < 7) return false;
  const size_t comma = f[0].find(',');
  const size_t dot = f[3].find('.');
  return comma != std::string_view::npos && digits(f[0].substr(0, comma)) && digits(f[0].substr(comma + 1)) &&
         digits(f[1]) && digits(f[2]) && dot != std::string_view::npos && f[3].size() - dot == 10 &&
         decimal(f[3]) && digits(f[4]);
}

// The format one data line fits, or "" when it fits none or several.
std::string classify(std::string_view line) {
  if (blkparse_line(line)) return "blkparse";
  std::array<std::string_view, 8> f;
  size_t n = split_fields(line, ',', f);
  std::vector<std::string> fits;
  if (n == 7 && digits(f[0]) && f[0].size() >= 17 && one_of(f[3], {"Read", "Write", "read", "write"}) &&
      digits(f[4]) && digits(f[5]))
    fits.push_back("msr");
  if (n == 6 && decimal(f[0]) && one_of(f[2], {"R", "W", "r", "w", ""}) && digits(f[4]) && digits(f[5]))
    fits.push_back("systor");
  if (n == 5 && decimal(f[0]) && digits(f[1]) && digits(f[2]) && one_of(f[3], {"0", "1"}) && !f[4].empty())
    fits.push_back("tencent");
  if (n == 5 && !f[0].empty() && one_of(f[1], {"R", "W", "r", "w"}) && digits(f[2]) && digits(f[3]) && digits(f[4]))
    fits.push_back("alibaba");
  if (n >= 5 && n <= 8 && !f[0].empty() && digits(f[1]) && digits(f[2]) && one_of(f[3], {"r", "w", "R", "W"}) &&
      decimal(f[4]))
    fits.push_back("spc");
  n = split_fields(line, ' ', f);
  if (n == 5 && decimal(f[0]) && digits(f[1]) && digits(f[2]) && digits(f[3]) && digits(f[4]))
    fits.push_back("disksim");
  return fits.size() == 1 ? fits[0] : std::string();
}

}  // namespace

std::string detect_format(std::istream& in, const std::string& name) {
  std::string head(kHeadBytes, '\0');
  head.resize(read_bytes(in, head.data(), head.size()));
  if (head.empty()) throw format::InputError(name + ": empty input: cannot tell its format");
  if (head.size() >= 4) {
    uint32_t magic;
    std::memcpy(&magic, head.data(), 4);
    if (format::blktrace::is_magic(magic) || format::blktrace::is_magic(__builtin_bswap32(magic))) return "blktrace";
  }
  if (!is_text(head)) {
    // vscsi has no magic: its version byte sits at offset 15 (v1) or 3 (v2).
    if (head.size() >= 32 && (head[15] == 1 || head[3] == 2)) return "vscsi";
    throw format::InputError(name + ": binary data that is neither blktrace nor vscsi: cannot tell its format");
  }
  // Text: the header line, or else what the first data lines look like.
  std::vector<std::string_view> lines;
  std::string_view rest = head;
  if (head.size() == kHeadBytes) rest = rest.substr(0, rest.rfind('\n') + 1);  // no cut line
  while (!rest.empty() && lines.size() < kLinesJudged + 1) {
    const size_t nl = rest.find('\n');
    const std::string_view line = trim_field(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (!line.empty()) lines.push_back(line);
  }
  if (lines.empty()) throw format::InputError(name + ": only blank lines: cannot tell its format");
  const std::string_view first = lines[0];
  if (first == "fio version 2 iolog" || first == "fio version 3 iolog") return "fio-iolog";
  if (first.starts_with("index,device,major,minor,op,flags,")) return "csv";
  if (first.starts_with('{')) return "jsonl";  // no other format starts with an object
  if (first.starts_with("Timestamp,Response,IOType,LUN,Offset,Size")) return "systor";
  if (first.starts_with("device_id,opcode,offset,length,timestamp")) return "alibaba";
  if (first.starts_with("Timestamp,Offset,Size,IOType,VolumeID")) return "tencent";
  std::string found;
  for (size_t i = 0; i < lines.size() && i < kLinesJudged; ++i) {
    const std::string fits = classify(lines[i]);
    if (fits.empty() || (!found.empty() && fits != found))
      throw format::InputError(name + ": line '" + std::string(lines[i].substr(0, 60)) +
                               "' fits no single format: cannot tell the format; name it instead of auto");
    found = fits;
  }
  return found;
}

std::string detect_file_format(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw format::error_errno(path, "cannot open input", errno);
  DecompressingStream in(file.rdbuf(), path);
  return detect_format(in, path);
}

}  // namespace iotape::convert
