// Block devices as sysfs describes them: the directory behind a device
// number, and the identity and geometry a trace's device table records.
// Capture describes the disks it records with it, replay its target.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "iotape/v1/trace.pb.h"

namespace iotape::host {

// The first line of a sysfs attribute without trailing blanks; empty when
// the attribute cannot be read.
std::string read_sysfs_attribute(const std::filesystem::path& path);
// The same as a decimal number; 0 when missing or not a number.
uint64_t read_sysfs_number(const std::filesystem::path& path);

// The sysfs directory of block device MAJOR:MINOR (/sys/dev/block/MAJ:MIN
// resolved: .../block/DISK, or .../block/DISK/PART for a partition); empty
// when there is no such device.
std::filesystem::path block_device_dir(uint32_t major, uint32_t minor);

// The directory of the whole disk that device directory `dir` is part of:
// its parent for a partition, else `dir` itself.
std::filesystem::path whole_disk_dir(const std::filesystem::path& dir);

// Device MAJOR:MINOR from its sysfs directory: named after the directory,
// with model, serial, size, block sizes and rotational. Model, serial and
// queue attributes are the whole disk's.
v1::Device describe_block_device(const std::filesystem::path& dir, uint32_t major, uint32_t minor);

}  // namespace iotape::host
