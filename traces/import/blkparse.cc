#include "traces/import/blkparse.h"

#include <array>
#include <cstring>

#include "traces/import/block_io_assembler.h"
#include "traces/import/input.h"
#include "traces/import/text_lines.h"

namespace iotape {
namespace {

using blk::TraceEvent;
namespace category = blktrace::category;

// The action of a blkparse action column ("Q", "UT", ...); 0 for a message.
uint32_t action_of(const FieldParser& p, std::string_view a) {
  if (a == "UT") return blktrace::kUnplugTimer;
  if (a.size() == 1) switch (a[0]) {
      case 'Q': return blktrace::kQueue;
      case 'M': return blktrace::kBackmerge;
      case 'F': return blktrace::kFrontmerge;
      case 'G': return blktrace::kGetrq;
      case 'S': return blktrace::kSleeprq;
      case 'R': return blktrace::kRequeue;
      case 'D': return blktrace::kIssue;
      case 'C': return blktrace::kComplete;
      case 'P': return blktrace::kPlug;
      case 'U': return blktrace::kUnplug;
      case 'I': return blktrace::kInsert;
      case 'X': return blktrace::kSplit;
      case 'B': return blktrace::kBounce;
      case 'A': return blktrace::kRemap;
      case 'm': return 0;
    }
  p.fail("unknown action " + quote_field(a));
}

// RWBS back to categories, and whether it names a zone command (which no
// category tells). The letters, as blkparse (blkparse_fmt.c, fill_rwbs) and
// the kernel (kernel/trace/blktrace.c, blk_fill_rwbs, whose tracepoint text
// tools reshape into blkparse's columns) have printed them:
//   blkparse                  [F]{D|W|R|N}[F][A][S][M]  leading F: preflush; later F: FUA
//   blkparse, older kernels   {D|W|R|N}[A][B][S][M]     B: barrier, the preflush of kernels
//                                                       before flush and FUA (the same bit)
//   kernel, with REQ_SECURE   [F]{W|D|R|N}[F][A][S][M][E]   E: secure discard
//   kernel, with REQ_OP       [F]{W|D|DE|F|R|N}[F][A][S][M]  DE: secure erase; F alone: a flush
//   kernel, lately            ZA, ZR, ZRA, ZF, ZO, ZC for the op (zone append, reset (all),
//                             finish, open, close), and a last [U] (atomic write)
uint32_t categories_of(const FieldParser& p, std::string_view rwbs, bool& zone_command) {
  uint32_t c = 0;
  std::string_view s = rwbs;
  auto take = [&s](std::string_view letters) {
    if (!s.starts_with(letters)) return false;
    s.remove_prefix(letters.size());
    return true;
  };
  if (s.size() > 1 && s[0] == 'F' && std::string_view("DWRNFZ").find(s[1]) != std::string_view::npos) {
    c |= category::kFlush;
    s.remove_prefix(1);
  }
  zone_command = false;
  if (take("DE") || take("D"))
    c |= category::kDiscard | category::kWrite;  // discards are writes to the block layer
  else if (take("W") || take("ZA"))
    c |= category::kWrite;
  else if (take("F"))
    c |= category::kFlush;
  else if (take("ZRA") || take("ZR") || take("ZF") || take("ZO") || take("ZC"))
    zone_command = true;
  else if (!take("R") && !take("N"))
    p.fail("RWBS " + quote_field(rwbs) + " names no operation (D, W, R, N, F or Z.)");
  for (const char* order = "FABSMEU"; !s.empty(); s.remove_prefix(1)) {
    const char* at = std::strchr(order, s[0]);
    if (!at || !*at) p.fail("RWBS " + quote_field(rwbs) + " has an unknown or misplaced letter");
    order = at + 1;
    switch (s[0]) {
      case 'F': c |= category::kFua; break;
      case 'A': c |= category::kAhead; break;
      case 'B': c |= category::kFlush; break;
      case 'S': c |= category::kSync; break;
      case 'M': c |= category::kMeta; break;
      case 'E': c |= category::kDiscard | category::kWrite; break;
      default: break;  // U: iotape keeps no flag for atomic writes
    }
  }
  return c;
}

uint32_t device_of(const FieldParser& p, std::string_view d) {
  const size_t comma = d.find(',');
  if (comma == std::string_view::npos) p.fail("device " + quote_field(d) + " is not MAJOR,MINOR");
  const uint64_t major = p.number(d.substr(0, comma), "major"), minor = p.number(d.substr(comma + 1), "minor");
  if (major > 0xfff || minor > 0xfffff) p.fail("device " + quote_field(d) + " is out of range");
  return blktrace::device(static_cast<uint32_t>(major), static_cast<uint32_t>(minor));
}

// The summary blkparse prints after the events: "CPU0 (name):", "Total (name):".
bool summary_start(std::string_view line) {
  return (line.starts_with("CPU") && line.size() > 3 && line[3] >= '0' && line[3] <= '9') ||
         line.starts_with("Total (");
}

class TextEvents {
 public:
  TextEvents(TraceWriter& out, ImportReport& report) : assembler_(out, report), report_(report) {}

  void parse_line(const FieldParser& p, std::string_view text, const blk::EventPlace& place) {
    std::array<std::string_view, 7> f;
    size_t n = 0, at = 0;
    for (; n < f.size(); ++n) {  // the seven header columns; DETAILS is the rest of the line
      at = text.find_first_not_of(" \t", at);
      if (at == std::string_view::npos) break;
      const size_t end = std::min(text.find_first_of(" \t", at), text.size());
      f[n] = text.substr(at, end - at);
      at = end;
    }
    if (n < 7) p.fail("expected MAJ,MIN CPU SEQ TIME PID ACTION RWBS, found " + std::to_string(n) + " columns: not blkparse output");
    std::string_view details = trim_field(at < text.size() ? text.substr(at) : std::string_view());
    ev_ = {};
    ev_.dev = device_of(p, f[0]);
    const uint64_t cpu = p.number(f[1], "cpu"), pid = p.number(f[4], "pid");
    if (cpu > UINT32_MAX || pid > UINT32_MAX) p.fail("cpu or pid out of range");
    ev_.cpu = static_cast<uint32_t>(cpu);
    ev_.pid = static_cast<uint32_t>(pid);
    ev_.time = static_cast<uint64_t>(p.decimal_ns(f[3], 1'000'000'000, "time"));
    const uint32_t what = action_of(p, f[5]);
    ++report_.records;
    if (what == 0) return;  // a scheduler message: no event of a request
    uint32_t c = categories_of(p, f[6], ev_.zone_command);

    // The [comm] or [error] tail, except for unplugs ("[comm] N").
    std::string_view tail;
    if (details.ends_with(']')) {
      const size_t open = details.rfind('[');
      if (open == std::string_view::npos) p.fail("']' without '[': " + quote_field(details));
      tail = details.substr(open + 1, details.size() - open - 2);
      details = trim_field(details.substr(0, open));
    }
    std::array<std::string_view, 6> d;
    const size_t dn = split_fields(details, ' ', d);
    if (dn > d.size()) p.fail("unexpected details " + quote_field(details));
    const bool error_tail = what == blktrace::kComplete || what == blktrace::kRequeue;
    if (what == blktrace::kRemap) {
      // SECTOR + N <- (M,m) FROM
      if (dn != 6 || d[1] != "+" || d[3] != "<-" || !d[4].starts_with('(') || !d[4].ends_with(')'))
        p.fail("remap details are not 'SECTOR + N <- (M,m) SECTOR': " + quote_field(details));
      ev_.sector = p.number(d[0], "sector");
      ev_.bytes = blocks_to_bytes(p, d[2]);
      ev_.remap_from_dev = device_of(p, d[4].substr(1, d[4].size() - 2));
      ev_.remap_to_dev = ev_.dev;
      ev_.remap_from_sector = p.number(d[5], "sector");
    } else if (what == blktrace::kSplit) {
      if (dn != 3 || d[1] != "/") p.fail("split details are not 'SECTOR / SECTOR': " + quote_field(details));
      ev_.sector = p.number(d[0], "sector");
      ev_.split_sector = p.number(d[2], "sector");
      if (ev_.split_sector < ev_.sector || ev_.split_sector - ev_.sector > UINT32_MAX / 512)
        p.fail("split at " + std::to_string(ev_.split_sector) + " is out of range");
      ev_.bytes = static_cast<uint32_t>((ev_.split_sector - ev_.sector) * 512);
    } else if (dn >= 3 && d[1] == "+") {  // SECTOR + N, maybe (elapsed)
      ev_.sector = p.number(d[0], "sector");
      ev_.bytes = blocks_to_bytes(p, d[2]);
    } else if (dn >= 1 && error_tail) {  // a completion of zero bytes: its sector only
      ev_.sector = p.number(d[0], "sector");
      ev_.sectorless = true;
    } else if (dn >= 1 && what != blktrace::kUnplug && what != blktrace::kUnplugTimer) {
      c |= category::kPassthrough;  // passthrough requests print their byte count, no sector
    } else if (dn == 0) {
      ev_.sectorless = true;  // a request of zero bytes: no sector either
    }
    if (error_tail) {
      const int64_t e = tail.empty() ? 0 : p.signed_number(tail, "error");
      if (e < INT16_MIN || e > UINT16_MAX) p.fail("error " + std::to_string(e) + " is out of range");
      ev_.error = static_cast<uint16_t>(e);
    } else if (tail != "(null)" && what != blktrace::kUnplug && what != blktrace::kUnplugTimer) {
      comm_ = printable(tail);  // names in a trace must be UTF-8
      ev_.comm = comm_;
    }
    ev_.action = what | c << 16;
    assembler_.on_event(ev_, place);
  }

  void finish() { assembler_.finish(); }

 private:
  static uint32_t blocks_to_bytes(const FieldParser& p, std::string_view blocks) {
    const uint64_t n = p.number(blocks, "block count");
    if (n > UINT32_MAX / 512) p.fail("block count " + std::to_string(n) + " is out of range");
    return static_cast<uint32_t>(n * 512);
  }

  blk::BlockIoAssembler assembler_;
  ImportReport& report_;
  TraceEvent ev_;
  std::string comm_;
};

}  // namespace

ImportReport import_blkparse(std::span<const Input> inputs, TraceWriter& out) {
  ImportReport report;
  TextEvents events(out, report);
  for (const Input& in : inputs) {
    LineReader lines(in, "blkparse output");
    const uint64_t before = report.records;
    bool summary = false;
    for (std::string_view text; lines.next(text);) {
      text = trim_field(text);
      // Besides blank lines: column headings and rules some tools print
      // above the events ("#Maj,Mn CPU SeqNo ...", "#-----"), and the input
      // file names of blkparse -i.
      if (text.empty() || text.starts_with('#') || text.starts_with("Input file ")) continue;
      if (summary || summary_start(text)) {
        summary = true;  // the statistics after the events: nothing to import
        continue;
      }
      events.parse_line(FieldParser(in.name, lines.line()), text, {in.name, lines.line(), true});
    }
    if (report.records == before)
      throw error_at_line(in.name, lines.line() + 1, lines.line() == 0 ? "empty file: no blkparse events" : "no blkparse events");
  }
  events.finish();
  return report;
}

}  // namespace iotape
