// What the review asks of the drive itself, outside the IO it measures: its
// identity as sysfs describes it, the completed-IO counter of
// /sys/block/X/stat, and the NVMe logs (admin Get Log Page ioctls) that write
// amplification is read from.
//
// Thread safety: every function is a free function of its arguments and the
// system's state; any may be called from any thread.
// Errors: reads that find nothing say so in their result (nullopt, a reason);
// only host_and_media_bytes_written() throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "analysis/review_document.h"
#include "replay/target.h"

namespace iotape::workloads {

// The target as review.json's "drive" records it: `label` (empty: the
// device's name), the target's path, size and block sizes, and for a block
// device its model, vendor, serial and IO scheduler, and a loop device's
// backing file and direct IO setting.
// REQUIRES: `t` is open (replay::open_target).
analysis::ReviewDrive describe_drive(const replay::Target& t, const std::string& label);

// IOs the block device has completed since boot per /sys/block/X/stat
// (reads, writes, discards, flushes); nullopt for a regular file or a stat
// file it cannot read.
std::optional<uint64_t> completed_device_ios(const replay::Target& t);

// Where write amplification is read from: NVMe's SMART / health log (02h,
// host data units written) and the OCP SMART extended log (C0h, physical
// media bytes written). Only an NVMe drive that returns both has it.
struct WriteAmplificationSource {
  bool available = false;
  std::string reason;  // why not, when !available: a sentence for the page
  std::string path;    // the device both logs are read from
};

// Asks the drive for both logs once (the ioctls need CAP_SYS_ADMIN; a drive
// that refuses either is unavailable, with the reason). Never throws.
WriteAmplificationSource write_amplification_source(const replay::Target& t);

// Host and media bytes written so far, read from both logs now (NVMe data
// units of 512,000 bytes; the OCP counter is in bytes).
// REQUIRES: `w.available`. Throws IoError when the logs can no longer be read.
std::pair<double, double> host_and_media_bytes_written(const WriteAmplificationSource& w);

}  // namespace iotape::workloads
