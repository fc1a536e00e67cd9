// Durations, sizes and time windows as users write them: one grammar for every
// option of every command and every field of a workload profile.
//
// A number is digits with an optional fraction ("10", "1.5", ".5"); no sign,
// exponent or space. It is followed directly by its unit, if any.
//
// Durations (to int64 ns, rounded to the nearest ns, halves up):
//   ns, us (or µs), ms, s, m (or min), h, d; a plain number is seconds.
//   "90s", "10m", "7d", "1.5us", "250ms", "10" (= 10 s).
//
// Sizes (to uint64 bytes, rounded to the nearest byte, halves up):
//   a plain number or B is bytes;
//   K, M, G, T and k, m, g, t (as fio writes 4k) and KiB, MiB, GiB, TiB are
//   binary (1024, 1024^2, ...);
//   kB, MB, GB, TB are decimal (1000, 1000^2, ...), as drives are sold;
//   KB is binary (1024): that is what it meant in profiles before this
//   grammar and in the JEDEC memory sense, and 1 kB is spelled with SI's k.
//   "4k", "512M", "1.5G", "1GiB", "1GB", "100B", "4096".
//
// Windows: START..END, each a duration as above (so "10..20" is seconds 10 to
// 20), relative to a trace's first IO. Either end may be left out: "10s..",
// "..2h". END must be after START.
//
// Every parser takes the text and `what`, the option or field it came from
// ("--length", "\"span\""), and throws UsageError (format/error.h) whose
// message starts with `what`, quotes the text and names the accepted forms.
// Negative numbers, unknown units, empty text and values beyond the result
// type are errors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace iotape::units {

int64_t parse_duration(std::string_view text, std::string_view what);

uint64_t parse_size(std::string_view text, std::string_view what);

// A part of a trace, in ns from its first IO: [start_ns, end_ns), or to the
// trace's end when end_ns is unset.
struct Window {
  int64_t start_ns = 0;
  std::optional<int64_t> end_ns;
};

Window parse_window(std::string_view text, std::string_view what);

// A size as profiles write it, in the largest binary unit that keeps it a
// whole number: "512", "4K", "1M", "1536" (parse_size reads it back).
std::string format_size(uint64_t bytes);

}  // namespace iotape::units
