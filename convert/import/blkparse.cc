#include "convert/import/blkparse.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <utility>

#include "blockevents/block_io_assembler.h"
#include "blockevents/sorted_spill.h"
#include "convert/import/input.h"
#include "convert/import/text_lines.h"

namespace iotape::convert {
namespace {

using blockevents::TraceEvent;
namespace category = format::blktrace::category;

// The action of a blkparse action column ("Q", "UT", ...); 0 for a message.
uint32_t action_of(const FieldParser& p, std::string_view a) {
  if (a == "UT") return format::blktrace::kUnplugTimer;
  if (a.size() == 1) switch (a[0]) {
      case 'Q':
        return format::blktrace::kQueue;
      case 'M':
        return format::blktrace::kBackmerge;
      case 'F':
        return format::blktrace::kFrontmerge;
      case 'G':
        return format::blktrace::kGetrq;
      case 'S':
        return format::blktrace::kSleeprq;
      case 'R':
        return format::blktrace::kRequeue;
      case 'D':
        return format::blktrace::kIssue;
      case 'C':
        return format::blktrace::kComplete;
      case 'P':
        return format::blktrace::kPlug;
      case 'U':
        return format::blktrace::kUnplug;
      case 'I':
        return format::blktrace::kInsert;
      case 'X':
        return format::blktrace::kSplit;
      case 'B':
        return format::blktrace::kBounce;
      case 'A':
        return format::blktrace::kRemap;
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
  return format::blktrace::device(static_cast<uint32_t>(major), static_cast<uint32_t>(minor));
}

// The summary blkparse prints after the events: "CPU0 (name):", "Total (name):".
bool summary_start(std::string_view line) {
  return (line.starts_with("CPU") && line.size() > 3 && line[3] >= '0' && line[3] <= '9') ||
         line.starts_with("Total (");
}

// The event of one line; false for a scheduler message, which is none.
class EventParser {
 public:
  bool parse(const FieldParser& p, std::string_view text, TraceEvent& ev) {
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
    ev = {};
    ev.dev = device_of(p, f[0]);
    const uint64_t cpu = p.number(f[1], "cpu"), pid = p.number(f[4], "pid");
    if (cpu > UINT32_MAX || pid > UINT32_MAX) p.fail("cpu or pid out of range");
    ev.cpu = static_cast<uint32_t>(cpu);
    ev.pid = static_cast<uint32_t>(pid);
    ev.time = static_cast<uint64_t>(p.decimal_ns(f[3], 1'000'000'000, "time"));
    const uint32_t what = action_of(p, f[5]);
    if (what == 0) return false;  // a scheduler message: no event of a request
    uint32_t c = categories_of(p, f[6], ev.zone_command);

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
    const bool error_tail = what == format::blktrace::kComplete || what == format::blktrace::kRequeue;
    if (what == format::blktrace::kRemap) {
      // SECTOR + N <- (M,m) FROM
      if (dn != 6 || d[1] != "+" || d[3] != "<-" || !d[4].starts_with('(') || !d[4].ends_with(')'))
        p.fail("remap details are not 'SECTOR + N <- (M,m) SECTOR': " + quote_field(details));
      ev.sector = p.number(d[0], "sector");
      ev.bytes = blocks_to_bytes(p, d[2]);
      ev.remap_from_dev = device_of(p, d[4].substr(1, d[4].size() - 2));
      ev.remap_to_dev = ev.dev;
      ev.remap_from_sector = p.number(d[5], "sector");
    } else if (what == format::blktrace::kSplit) {
      if (dn != 3 || d[1] != "/") p.fail("split details are not 'SECTOR / SECTOR': " + quote_field(details));
      ev.sector = p.number(d[0], "sector");
      ev.split_sector = p.number(d[2], "sector");
      if (ev.split_sector < ev.sector || ev.split_sector - ev.sector > UINT32_MAX / 512)
        p.fail("split at " + std::to_string(ev.split_sector) + " is out of range");
      ev.bytes = static_cast<uint32_t>((ev.split_sector - ev.sector) * 512);
    } else if (dn >= 3 && d[1] == "+") {  // SECTOR + N, maybe (elapsed)
      ev.sector = p.number(d[0], "sector");
      ev.bytes = blocks_to_bytes(p, d[2]);
    } else if (dn >= 1 && error_tail) {  // a completion of zero bytes: its sector only
      ev.sector = p.number(d[0], "sector");
      ev.sectorless = true;
    } else if (dn >= 1 && what != format::blktrace::kUnplug && what != format::blktrace::kUnplugTimer) {
      c |= category::kPassthrough;  // passthrough requests print their byte count, no sector
    } else if (dn == 0) {
      ev.sectorless = true;  // a request of zero bytes: no sector either
    }
    if (error_tail) {
      const int64_t e = tail.empty() ? 0 : p.signed_number(tail, "error");
      if (e < INT16_MIN || e > UINT16_MAX) p.fail("error " + std::to_string(e) + " is out of range");
      ev.error = static_cast<uint16_t>(e);
    } else if (tail != "(null)" && what != format::blktrace::kUnplug && what != format::blktrace::kUnplugTimer) {
      comm_ = printable(tail);  // names in a trace must be UTF-8
      ev.comm = comm_;
    }
    ev.action = what | c << 16;
    return true;
  }

 private:
  static uint32_t blocks_to_bytes(const FieldParser& p, std::string_view blocks) {
    const uint64_t n = p.number(blocks, "block count");
    if (n > UINT32_MAX / 512) p.fail("block count " + std::to_string(n) + " is out of range");
    return static_cast<uint32_t>(n * 512);
  }

  std::string comm_;
};

// An event held for sorting, with the line it came from; its process name is
// the held record's text.
struct HeldEvent {
  TraceEvent ev;
  uint64_t line;
};
static_assert(std::is_trivially_copyable_v<HeldEvent>);  // held as bytes

}  // namespace

blockevents::ImportReport import_blkparse(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                          format::TraceWriter& out) {
  blockevents::ImportReport report;
  blockevents::WriterOutput output(out);
  blockevents::BlockIoAssembler assembler(output, report, options);
  EventParser parser;
  uint64_t out_of_order = 0, spilled = 0;
  for (const Input& in : inputs) {
    // blkparse prints events in time order, but text printed CPU by CPU, or
    // cut and joined, is not: each input is sorted by time before assembly.
    blockevents::RecordSpill sorted(sizeof(HeldEvent), options.sort_run_ios, options.spill_dir);
    LineReader lines(in, "blkparse output");
    const uint64_t before = report.records;
    bool summary = false;
    uint64_t latest = 0;
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
      ++report.records;
      HeldEvent held{.ev = {}, .line = lines.line()};
      if (!parser.parse(FieldParser(in.name, lines.line()), text, held.ev)) continue;
      if (held.ev.time < latest) ++out_of_order;
      latest = std::max(latest, held.ev.time);
      const std::string_view comm = std::exchange(held.ev.comm, {});
      sorted.add(static_cast<int64_t>(held.ev.time), &held, comm);
    }
    if (report.records == before)
      throw format::error_at_line(in.name, lines.line() + 1,
                                  lines.line() == 0 ? "empty file: no blkparse events" : "no blkparse events");
    sorted.drain([&](const void* fixed, std::string_view comm) {
      HeldEvent held;
      std::memcpy(&held, fixed, sizeof held);
      held.ev.comm = comm;
      assembler.on_event(held.ev, {&in.name, held.line, true});
    });
    spilled += sorted.spilled_runs();
  }
  if (out_of_order || spilled) {
    std::string note = "sorted by time";
    if (out_of_order)
      note += ": " + std::to_string(out_of_order) + " events came after later ones (text printed CPU by CPU?)";
    if (spilled) note += ", through " + std::to_string(spilled) + " spilled runs";
    report.notes.push_back(note);
  }
  assembler.finish();
  return report;
}

}  // namespace iotape::convert
