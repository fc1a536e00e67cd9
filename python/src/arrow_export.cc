// Exported Arrow arrays and schemas: the buffer pool, owners and release
// callbacks, string arrays and capsules (arrow_export.h).
#include "arrow_export.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>

namespace py = pybind11;

namespace iotape::python {
namespace {

// Column buffers are recycled: fresh ones of a chunk's size come from mmap
// and cost a page fault and a zeroed page per 4 KiB, more than filling them.
// Freed buffers wait here (up to kPoolBytes) for the next chunk's columns;
// pyarrow may free on any thread.
class BufferPool {
 public:
  static constexpr size_t kPoolBytes = 64u << 20;
  void* get(size_t bytes) {
    const size_t size = rounded(bytes);
    {
      std::lock_guard lock(mutex_);
      auto& list = free_[size];
      if (!list.empty()) {
        void* p = list.back();
        list.pop_back();
        pooled_ -= size;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, size);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void put(void* p, size_t bytes) {
    const size_t size = rounded(bytes);
    std::lock_guard lock(mutex_);
    if (pooled_ + size > kPoolBytes) {
      std::free(p);
      return;
    }
    free_[size].push_back(p);
    pooled_ += size;
  }

 private:
  static size_t rounded(size_t bytes) { return std::max<size_t>(64, std::bit_ceil(bytes)); }
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t pooled_ = 0;
};

BufferPool& pool() {
  static auto* p = new BufferPool;  // never destroyed: batches may outlive module teardown
  return *p;
}

// Releases and deletes a child or dictionary of an array or schema, or one a
// capsule owns.
template <typename Node>
void release_node(Node* n) {
  if (n->release) n->release(n);
  delete n;
}

void release_array(ArrowArray* a) {
  auto* owner = static_cast<ArrayOwner*>(a->private_data);
  for (auto* c : owner->children) release_node(c);
  if (owner->dictionary) release_node(owner->dictionary);
  discard(owner);
  a->release = nullptr;
}

// Schemas: one node per column, strings kept in the node.
struct SchemaOwner {
  std::string format, name;
  std::vector<ArrowSchema*> children;
  ArrowSchema* dictionary = nullptr;
};

void release_schema(ArrowSchema* s) {
  auto* owner = static_cast<SchemaOwner*>(s->private_data);
  for (auto* c : owner->children) release_node(c);
  if (owner->dictionary) release_node(owner->dictionary);
  delete owner;
  s->release = nullptr;
}

// A capsule named `name` that owns `node`.
template <typename Node>
py::capsule node_capsule(Node* node, const char* name) {
  return py::capsule(node, name, [](PyObject* cap) {
    release_node(static_cast<Node*>(PyCapsule_GetPointer(cap, PyCapsule_GetName(cap))));
  });
}

}  // namespace

void* alloc_buffer(ArrayOwner& o, size_t bytes) {
  void* p = pool().get(bytes);
  o.allocations.emplace_back(p, bytes);
  return p;
}

void discard(ArrayOwner* owner) {
  for (auto [p, bytes] : owner->allocations) pool().put(p, bytes);
  delete owner;
}

ArrowArray* new_array(int64_t length, int64_t null_count, ArrayOwner* owner) {
  auto* a = new ArrowArray{};
  a->length = length;
  a->null_count = null_count;
  a->n_buffers = static_cast<int64_t>(owner->buffers.size());
  a->buffers = owner->buffers.data();
  a->n_children = static_cast<int64_t>(owner->children.size());
  a->children = owner->children.data();
  a->dictionary = owner->dictionary;
  a->release = release_array;
  a->private_data = owner;
  return a;
}

ArrowArray* new_struct_array(int64_t length, std::vector<ArrowArray*> children) {
  auto* owner = new ArrayOwner;
  owner->children = std::move(children);
  owner->buffers = {nullptr};
  return new_array(length, 0, owner);
}

ArrowSchema* new_schema(std::string format, std::string name, bool nullable, ArrowSchema* dictionary) {
  auto* owner = new SchemaOwner{std::move(format), std::move(name), {}, dictionary};
  auto* s = new ArrowSchema{};
  s->format = owner->format.c_str();
  s->name = owner->name.c_str();
  s->flags = nullable ? ARROW_FLAG_NULLABLE : 0;
  s->dictionary = dictionary;
  s->release = release_schema;
  s->private_data = owner;
  return s;
}

ArrowSchema* new_struct_schema(std::vector<ArrowSchema*> children) {
  auto* s = new_schema("+s", "", false);
  auto* owner = static_cast<SchemaOwner*>(s->private_data);
  owner->children = std::move(children);
  s->n_children = static_cast<int64_t>(owner->children.size());
  s->children = owner->children.data();
  return s;
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (ok && len == 2) ok = c >= 0xc2;  // no overlong forms
    if (ok && len == 3) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);  // overlong, surrogates
    }
    if (ok && len == 4) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = c <= 0xf4 && !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out;
}

ArrowArray* string_array(const std::vector<std::string>& values) {
  auto* owner = new ArrayOwner;
  size_t bytes = 0;
  for (const auto& v : values) bytes += v.size();
  auto* offsets = static_cast<int32_t*>(alloc_buffer(*owner, (values.size() + 1) * sizeof(int32_t)));
  auto* data = static_cast<char*>(alloc_buffer(*owner, bytes));
  int32_t at = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    offsets[i] = at;
    std::memcpy(data + at, values[i].data(), values[i].size());
    at += static_cast<int32_t>(values[i].size());
  }
  offsets[values.size()] = at;
  owner->buffers = {nullptr, offsets, data};
  return new_array(static_cast<int64_t>(values.size()), 0, owner);
}

py::capsule schema_capsule(ArrowSchema* s) { return node_capsule(s, "arrow_schema"); }

py::capsule array_capsule(ArrowArray* a) { return node_capsule(a, "arrow_array"); }

}  // namespace iotape::python
