// Block devices as the capture back ends see them: whole disks named by
// major:minor, described from sysfs for the trace header.
// Plain functions of sysfs and /proc: callable from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "iotape/v1/trace.pb.h"

namespace iotape::observer {

struct BlockDevice {
  std::string name;        // "loop0", "nvme0n1": the entry in /sys/block
  uint32_t major = 0;
  uint32_t minor = 0;
  bool request_based = false;  // blk-mq (has /sys/block/NAME/mq); bio-based devices emit no request events
  uint32_t hw_queues = 0;      // blk-mq hardware queues
  uint32_t tags = 0;           // request tags per hardware queue: the larger of the driver's and the scheduler's
  v1::Device describe() const;  // name, numbers, model, serial, size, block sizes, rotational
};

// Every whole disk in /sys/block with a non-zero size.
std::vector<BlockDevice> all_disks();

// A device given as a path (/dev/sda, /dev/sda1) or MAJ:MIN. A partition
// resolves to its whole disk, whose requests carry the IOs. Throws
// std::runtime_error naming the argument when it is not a block device.
BlockDevice resolve_device(const std::string& spec);

}  // namespace iotape::observer
