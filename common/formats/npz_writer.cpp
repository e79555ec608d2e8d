#include "common/formats/npz_writer.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/base/files.h"
#include "common/formats/inflate.h"  // crc32_of
#include "common/formats/zip_format.h"

namespace tpuperf {

using namespace zip;

namespace {

// Any fixed date will do: the archive's content is what matters. 1980-01-01 00:00.
constexpr uint16_t kDosTime = 0, kDosDate = (1 << 5) | 1;

}  // namespace

struct NpzWriter::Entry {
  std::string name;  // key + ".npy"
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0, uncompressed = 0, offset = 0;
  uint64_t expected = 0;  // uncompressed size the header promises
  bool local_zip64 = false;
};

struct NpzWriter::Deflater {
  z_stream z;
  std::vector<uint8_t> out = std::vector<uint8_t>(kChunk);
  Deflater() {
    std::memset(&z, 0, sizeof(z));
    if (deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw Error("cannot initialize zlib deflate");
  }
  ~Deflater() { deflateEnd(&z); }
};

NpzWriter::NpzWriter(const std::string& path, bool compress)
    : path_(path), tmp_path_(path + ".tmp"), compress_(compress) {
  file_ = std::fopen(tmp_path_.c_str(), "wb");
  if (!file_) throw Error("cannot create: " + errno_text(), tmp_path_);
}

NpzWriter::~NpzWriter() {
  deflater_.reset();
  if (file_) {
    std::fclose(file_);
    std::remove(tmp_path_.c_str());
  }
}

void NpzWriter::fail(const std::string& reason, const std::string& key) {
  throw Error(reason, path_, key);
}

void NpzWriter::write_bytes(const void* data, size_t n) {
  if (n > 0 && std::fwrite(data, 1, n, file_) != n) fail("write failed: " + errno_text());
  offset_ += n;
}

void NpzWriter::write_raw_at(uint64_t offset, const std::string& bytes) {
  if (fseeko(file_, static_cast<off_t>(offset), SEEK_SET) != 0 ||
      std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size() ||
      fseeko(file_, 0, SEEK_END) != 0)
    fail("write failed: " + errno_text());
}

void NpzWriter::add(const std::string& key, const NpyArray& array) {
  uint64_t need = static_cast<uint64_t>(shape_count(array.shape)) * dtype_size(array.dtype);
  if (array.data.size() != need)
    fail(fmt::format("array holds {} bytes, shape {} needs {}", array.data.size(),
                     format_shape(array.shape), need),
         key);
  add(key, array.dtype, array.shape, array.data.data());
}

void NpzWriter::add(const std::string& key, DType dtype, const std::vector<int64_t>& shape,
                    const void* data) {
  begin_member(key, dtype, shape);
  write_data(data, entries_.back()->expected - entries_.back()->uncompressed);
  end_member();
}

void NpzWriter::begin_member(const std::string& key, DType dtype,
                             const std::vector<int64_t>& shape) {
  if (!file_) fail("writer is already closed", key);
  if (in_member_) fail("member '" + entries_.back()->name + "' is still open", key);
  if (key.empty()) fail("empty key");
  for (const auto& e : entries_)
    if (e->name == key + ".npy") fail("duplicate key", key);
  std::string header;
  uint64_t nbytes = 0;
  try {
    header = make_npy_header(dtype, shape);
    nbytes = static_cast<uint64_t>(shape_count(shape)) * dtype_size(dtype);
  } catch (Error& e) {
    e.with_file(path_).with_key(key);
    throw;
  }
  auto e = std::make_unique<Entry>();
  e->name = key + ".npy";
  e->method = compress_ ? 8 : 0;
  e->offset = offset_;
  e->expected = header.size() + nbytes;
  // Deflate's worst case is a few bytes per 16 KiB stored block; this bound is generous.
  uint64_t worst = e->expected + (e->expected >> 10) + 64;
  e->local_zip64 = force_zip64_ || worst >= kMax32;

  std::string lh;
  put32(lh, kLocalSig);
  put16(lh, e->local_zip64 ? 45 : 20);
  put16(lh, 0);
  put16(lh, e->method);
  put16(lh, kDosTime);
  put16(lh, kDosDate);
  put32(lh, 0);  // crc and sizes are patched in end_member
  put32(lh, e->local_zip64 ? kMax32 : 0);
  put32(lh, e->local_zip64 ? kMax32 : 0);
  put16(lh, static_cast<uint16_t>(e->name.size()));
  put16(lh, e->local_zip64 ? 20 : 0);
  lh += e->name;
  if (e->local_zip64) {
    put16(lh, kZip64ExtraTag);
    put16(lh, 16);
    put64(lh, 0);
    put64(lh, 0);
  }
  entries_.push_back(std::move(e));
  in_member_ = true;
  write_bytes(lh.data(), lh.size());
  if (compress_) deflater_ = std::make_unique<Deflater>();
  emit(header.data(), header.size());
}

void NpzWriter::write_data(const void* data, size_t n) {
  if (!in_member_) fail("write_data outside a member");
  Entry& e = *entries_.back();
  if (n > e.expected - e.uncompressed)
    fail(fmt::format("{} more bytes exceed the shape's {} bytes", n, e.expected), member_key(e.name));
  emit(data, n);
}

void NpzWriter::emit(const void* data, size_t n) {
  Entry& e = *entries_.back();
  const auto* p = static_cast<const uint8_t*>(data);
  e.crc = crc32_of(p, n, e.crc);
  e.uncompressed += n;
  if (!compress_) {
    write_bytes(p, n);
    e.compressed += n;
    return;
  }
  z_stream& z = deflater_->z;
  while (n > 0) {
    size_t step = std::min(n, kChunk);
    z.next_in = const_cast<uint8_t*>(p);
    z.avail_in = static_cast<uInt>(step);
    while (z.avail_in > 0) {
      z.next_out = deflater_->out.data();
      z.avail_out = static_cast<uInt>(deflater_->out.size());
      ::deflate(&z, Z_NO_FLUSH);
      size_t made = deflater_->out.size() - z.avail_out;
      write_bytes(deflater_->out.data(), made);
      e.compressed += made;
    }
    p += step;
    n -= step;
  }
}

void NpzWriter::end_member() {
  if (!in_member_) fail("end_member outside a member");
  Entry& e = *entries_.back();
  if (e.uncompressed != e.expected)
    fail(fmt::format("member has {} bytes, its shape needs {}", e.uncompressed, e.expected),
         member_key(e.name));
  if (compress_) {
    z_stream& z = deflater_->z;
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      z.next_out = deflater_->out.data();
      z.avail_out = static_cast<uInt>(deflater_->out.size());
      rc = ::deflate(&z, Z_FINISH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) fail("deflate failed", member_key(e.name));
      size_t made = deflater_->out.size() - z.avail_out;
      write_bytes(deflater_->out.data(), made);
      e.compressed += made;
    }
    deflater_.reset();
  }
  if (!e.local_zip64 && (e.compressed >= kMax32 || e.uncompressed >= kMax32))
    fail("member outgrew its local header", member_key(e.name));
  std::string patch;
  put32(patch, e.crc);
  put32(patch, e.local_zip64 ? kMax32 : static_cast<uint32_t>(e.compressed));
  put32(patch, e.local_zip64 ? kMax32 : static_cast<uint32_t>(e.uncompressed));
  write_raw_at(e.offset + 14, patch);
  if (e.local_zip64) {
    std::string sizes;
    put64(sizes, e.uncompressed);
    put64(sizes, e.compressed);
    write_raw_at(e.offset + kLocalLen + e.name.size() + 4, sizes);
  }
  in_member_ = false;
}

void NpzWriter::write_central_directory() {
  uint64_t cd_start = offset_;
  for (const auto& e : entries_) {
    bool big_u = force_zip64_ || e->uncompressed >= kMax32;
    bool big_c = force_zip64_ || e->compressed >= kMax32;
    bool big_o = force_zip64_ || e->offset >= kMax32;
    std::string extra;
    if (big_u || big_c || big_o) {
      put16(extra, kZip64ExtraTag);
      put16(extra, static_cast<uint16_t>(8 * (big_u + big_c + big_o)));
      if (big_u) put64(extra, e->uncompressed);
      if (big_c) put64(extra, e->compressed);
      if (big_o) put64(extra, e->offset);
    }
    uint16_t version = extra.empty() ? 20 : 45;
    std::string h;
    put32(h, kCentralSig);
    put16(h, static_cast<uint16_t>((3 << 8) | version));  // made by: Unix
    put16(h, version);
    put16(h, 0);
    put16(h, e->method);
    put16(h, kDosTime);
    put16(h, kDosDate);
    put32(h, e->crc);
    put32(h, big_c ? kMax32 : static_cast<uint32_t>(e->compressed));
    put32(h, big_u ? kMax32 : static_cast<uint32_t>(e->uncompressed));
    put16(h, static_cast<uint16_t>(e->name.size()));
    put16(h, static_cast<uint16_t>(extra.size()));
    put16(h, 0);  // comment
    put16(h, 0);  // disk
    put16(h, 0);  // internal attributes
    put32(h, 0100644u << 16);  // external attributes: a regular file, rw-r--r--
    put32(h, big_o ? kMax32 : static_cast<uint32_t>(e->offset));
    h += e->name;
    h += extra;
    write_bytes(h.data(), h.size());
  }
  uint64_t cd_size = offset_ - cd_start, count = entries_.size();
  bool zip64 = force_zip64_ || count >= kMax16 || cd_size >= kMax32 || cd_start >= kMax32;
  std::string t;
  if (zip64) {
    uint64_t z_off = offset_;
    put32(t, kZip64EndSig);
    put64(t, kZip64EndLen - 12);  // size of the rest of the record
    put16(t, (3 << 8) | 45);
    put16(t, 45);
    put32(t, 0);
    put32(t, 0);
    put64(t, count);
    put64(t, count);
    put64(t, cd_size);
    put64(t, cd_start);
    put32(t, kZip64LocatorSig);
    put32(t, 0);
    put64(t, z_off);
    put32(t, 1);
  }
  put32(t, kEndSig);
  put16(t, 0);
  put16(t, 0);
  put16(t, zip64 ? kMax16 : static_cast<uint16_t>(count));
  put16(t, zip64 ? kMax16 : static_cast<uint16_t>(count));
  put32(t, zip64 ? kMax32 : static_cast<uint32_t>(cd_size));
  put32(t, zip64 ? kMax32 : static_cast<uint32_t>(cd_start));
  put16(t, 0);
  write_bytes(t.data(), t.size());
}

void NpzWriter::close() {
  if (!file_) fail("writer is already closed");
  if (in_member_) fail("member is still open", member_key(entries_.back()->name));
  write_central_directory();
  bool ok = std::fflush(file_) == 0 && ::fsync(fileno(file_)) == 0;
  std::string why = ok ? "" : errno_text();
  ok = (std::fclose(file_) == 0) && ok;
  file_ = nullptr;
  if (!ok) {
    std::remove(tmp_path_.c_str());
    throw Error("write failed: " + (why.empty() ? errno_text() : why), tmp_path_);
  }
  rename_durable(tmp_path_, path_);
}


}  // namespace tpuperf
