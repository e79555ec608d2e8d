#include "common/formats/npz_reader.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/base/files.h"
#include "common/base/phase_clock.h"
#include "common/formats/inflate.h"

#include "common/formats/zip_format.h"

namespace tpuperf {

using namespace zip;

namespace {

// A header peek's first compressed read; each further read doubles up to kChunk, so that
// reading a header does not pull in a megabyte.
constexpr size_t kFirstReadBytes = 4096;
// Deflate emits at least one bit per 258 output bytes, so ~1032x is its ceiling.
constexpr uint64_t kMaxInflateRatio = 1032;

}  // namespace


// The first uncompressed bytes of a member, for header(): zlib inflates a deflate stream
// piece by piece, so a header is read without inflating (or holding) the member's data.
// The CRC covers the whole member, so it is not checked here. Whole members are inflated
// by inflate_member (libdeflate, one call), not by this.
class NpzReader::MemberStream {
 public:
  MemberStream(NpzReader& r, const Member& m, uint64_t data_start)
      : r_(r), m_(m), in_pos_(data_start), in_end_(data_start + m.compressed_size) {
    if (m_.method == 8) {
      std::memset(&z_, 0, sizeof(z_));
      if (inflateInit2(&z_, -15) != Z_OK) throw Error("cannot initialize zlib inflate");
      inflating_ = true;
    }
  }
  ~MemberStream() {
    if (inflating_) inflateEnd(&z_);
  }
  MemberStream(const MemberStream&) = delete;
  MemberStream& operator=(const MemberStream&) = delete;

  // Exactly n more bytes of output; the caller has checked them against the member size.
  void read(uint8_t* dst, size_t n) {
    while (n > 0) {
      size_t step = std::min(n, kChunk);
      if (m_.method == 0) {
        r_.read_at(in_pos_, dst, step);
        in_pos_ += step;
      } else {
        inflate_into(dst, step);
      }
      produced_ += step;
      dst += step;
      n -= step;
    }
  }

 private:
  void inflate_into(uint8_t* dst, size_t n) {
    z_.next_out = dst;
    z_.avail_out = static_cast<uInt>(n);
    while (z_.avail_out > 0) {
      if (stream_end_)
        throw Error(fmt::format("deflate stream ends after {} bytes, but the member declares {}",
                                produced_ + (n - z_.avail_out), m_.uncompressed_size));
      step_inflate();
    }
  }

  void step_inflate() {
    if (z_.avail_in == 0) refill();
    int rc = ::inflate(&z_, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      stream_end_ = true;
    } else if (rc == Z_BUF_ERROR && z_.avail_in == 0 && in_pos_ == in_end_) {
      throw Error(fmt::format("deflate stream is cut short: its {} compressed bytes end early",
                              m_.compressed_size));
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw Error(std::string("corrupt deflate data (") + (z_.msg ? z_.msg : zError(rc)) + ")");
    }
  }

  // Grows from kFirstReadBytes to kChunk.
  void refill() {
    size_t want = std::min<uint64_t>(in_end_ - in_pos_, std::min(kChunk, kFirstReadBytes << refills_));
    ++refills_;
    if (in_buf_.size() < want) in_buf_.resize(want);
    if (want > 0) r_.read_at(in_pos_, in_buf_.data(), want);
    in_pos_ += want;
    z_.next_in = in_buf_.data();
    z_.avail_in = static_cast<uInt>(want);
  }

  NpzReader& r_;
  const Member& m_;
  uint64_t in_pos_, in_end_;
  std::vector<uint8_t> in_buf_;
  z_stream z_;
  bool inflating_ = false, stream_end_ = false;
  int refills_ = 0;
  uint64_t produced_ = 0;
};

NpzReader::NpzReader(const std::string& path, NpzBuffer* buffer)
    : path_(path),
      own_buffer_(buffer ? nullptr : std::make_unique<NpzBuffer>()),
      buffer_(buffer ? buffer : own_buffer_.get()) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw Error(errno == ENOENT ? "file not found" : "cannot open: " + errno_text(), path);
  if (S_ISDIR(st.st_mode)) throw Error("is a directory, not an .npz file", path);
  if (!S_ISREG(st.st_mode)) throw Error("not a regular file", path);
  file_ = std::fopen(path.c_str(), "rb");
  if (!file_) throw Error("cannot open: " + errno_text(), path);
  try {
    if (::fstat(fileno(file_), &st) != 0) throw Error("cannot stat: " + errno_text());
    file_size_ = static_cast<uint64_t>(st.st_size);
    if (file_size_ == 0) throw Error("empty file (0 bytes), not an .npz archive");
    parse_central_directory();
  } catch (Error& e) {
    std::fclose(file_);
    file_ = nullptr;
    e.with_file(path_);
    throw;
  }
}

NpzReader::~NpzReader() {
  if (file_) std::fclose(file_);
}

void NpzReader::read_at(uint64_t offset, void* buf, size_t n) {
  if (offset > file_size_ || n > file_size_ - offset)
    throw Error(fmt::format("needs bytes [{}, {}) but the file has only {} (truncated?)", offset,
                            offset + n, file_size_));
  auto* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    ssize_t got = ::pread(fileno(file_), p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error("read failed: " + errno_text());
    if (got == 0) throw Error(fmt::format("unexpected end of file at offset {}", offset));
    p += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
}

void NpzReader::parse_central_directory() {
  size_t tail = static_cast<size_t>(std::min<uint64_t>(file_size_, kMax16 + kEndLen));
  uint64_t tail_start = file_size_ - tail;
  std::vector<uint8_t> buf(tail);
  read_at(tail_start, buf.data(), tail);
  // Scan backwards: the record sits at the end, followed only by its comment.
  size_t pos = tail;
  for (size_t i = tail >= kEndLen ? tail - kEndLen + 1 : 0; i-- > 0;) {
    if (get32(&buf[i]) == kEndSig && i + kEndLen + get16(&buf[i + 20]) <= tail) {
      pos = i;
      break;
    }
  }
  if (pos == tail)
    throw Error("not a zip archive: no end-of-central-directory record (truncated or not an .npz)");
  const uint8_t* e = &buf[pos];
  uint64_t end_pos = tail_start + pos;
  uint64_t count = get16(e + 10), cd_size = get32(e + 12), cd_offset = get32(e + 16);
  uint64_t limit = end_pos;  // the directory must lie before the end records
  if (get16(e + 4) != 0 && get16(e + 4) != kMax16) throw Error("multi-disk zip archives are not supported");

  if (end_pos >= kZip64LocatorLen) {
    uint8_t loc[kZip64LocatorLen];
    read_at(end_pos - kZip64LocatorLen, loc, kZip64LocatorLen);
    if (get32(loc) == kZip64LocatorSig) {
      uint64_t z_off = get64(loc + 8);
      if (z_off > end_pos - kZip64LocatorLen || end_pos - kZip64LocatorLen - z_off < kZip64EndLen)
        throw Error(fmt::format("zip64 end record offset {} points outside the file", z_off));
      uint8_t z[kZip64EndLen];
      read_at(z_off, z, kZip64EndLen);
      if (get32(z) != kZip64EndSig)
        throw Error(fmt::format("no zip64 end record at offset {}", z_off));
      count = get64(z + 32);
      cd_size = get64(z + 40);
      cd_offset = get64(z + 48);
      limit = z_off;
    }
  }
  if (cd_offset > limit || cd_size > limit - cd_offset) {
    bool past_eof = cd_offset > file_size_ || cd_size > file_size_ - cd_offset;
    throw Error(fmt::format("central directory (offset {}, {} bytes) {}", cd_offset, cd_size,
                            past_eof ? fmt::format("points past the end of the file ({} bytes)", file_size_)
                                     : std::string("overlaps the end-of-central-directory record")));
  }
  if (count > cd_size / kCentralLen)
    throw Error(fmt::format("central directory of {} bytes cannot hold {} entries", cd_size, count));
  parse_entries(cd_offset, cd_size, count);
}

void NpzReader::parse_entries(uint64_t cd_offset, uint64_t cd_size, uint64_t count) {
  std::vector<uint8_t> cd(static_cast<size_t>(cd_size));
  read_at(cd_offset, cd.data(), cd.size());
  size_t p = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (cd.size() - p < kCentralLen || get32(&cd[p]) != kCentralSig)
      throw Error(fmt::format("central directory entry {} is corrupt (bad signature)", i));
    const uint8_t* h = &cd[p];
    size_t name_len = get16(h + 28), extra_len = get16(h + 30), comment_len = get16(h + 32);
    if (cd.size() - p - kCentralLen < name_len + extra_len + comment_len)
      throw Error(fmt::format("central directory entry {} runs past the directory", i));
    Member m;
    m.flags = get16(h + 8);
    m.method = get16(h + 10);
    m.crc32 = get32(h + 16);
    m.compressed_size = get32(h + 20);
    m.uncompressed_size = get32(h + 24);
    m.local_header_offset = get32(h + 42);
    m.name.assign(reinterpret_cast<const char*>(h + kCentralLen), name_len);
    // Fields saturated at 0xFFFFFFFF continue in the zip64 extra field, in this order.
    const uint8_t* x = h + kCentralLen + name_len;
    const uint8_t* x_end = x + extra_len;
    while (x_end - x >= 4) {
      uint16_t tag = get16(x), len = get16(x + 2);
      const uint8_t* data = x + 4;
      if (x_end - data < len) break;
      if (tag == kZip64ExtraTag) {
        const uint8_t* q = data;
        for (uint64_t* field : {&m.uncompressed_size, &m.compressed_size, &m.local_header_offset}) {
          if (*field != kMax32) continue;
          if (data + len - q < 8)
            throw Error("zip64 extra field too short", "", member_key(m.name));
          *field = get64(q);
          q += 8;
        }
      }
      x = data + len;
    }
    std::string key = member_key(m.name);
    if (index_.count(key)) throw Error("duplicate member in archive", "", key);
    index_[key] = members_.size();
    members_.push_back(std::move(m));
    p += kCentralLen + name_len + extra_len + comment_len;
  }
}

std::vector<std::string> NpzReader::keys() const {
  std::vector<std::string> out;
  for (const Member& m : members_) out.push_back(member_key(m.name));
  return out;
}

bool NpzReader::has(const std::string& key) const { return index_.count(key) > 0; }

const NpzReader::Member& NpzReader::member(const std::string& key) const {
  auto it = index_.find(key);
  if (it == index_.end()) {
    std::string have;
    for (const std::string& k : keys()) have += (have.empty() ? "" : ", ") + k;
    throw Error("no such member in the archive (it holds: " + have + ")", path_, key);
  }
  return members_[it->second];
}

uint64_t NpzReader::data_offset(const Member& m) {
  uint8_t h[kLocalLen];
  read_at(m.local_header_offset, h, kLocalLen);
  if (get32(h) != kLocalSig)
    throw Error(fmt::format("no local header at offset {}", m.local_header_offset));
  // Sizes in the local header may be zero or zip64 placeholders: the central
  // directory's are authoritative, the local header only tells where data starts.
  return m.local_header_offset + kLocalLen + get16(h + 26) + get16(h + 28);
}

namespace {

// The declared sizes must be possible before anything that large is allocated or read.
void check_declared_size(const NpzReader::Member& m) {
  uint64_t usize = m.uncompressed_size, csize = m.compressed_size;
  if (usize == 0) throw Error("member is empty (0 bytes): not an .npy array");
  if (usize > static_cast<uint64_t>(csize) * kMaxInflateRatio + 64 ||
      (m.method == 0 && usize != csize))
    throw Error(fmt::format("declared size of {} bytes is impossible for {} bytes {}", usize, csize,
                            m.method == 0 ? "stored" : "of deflate data"));
}

}  // namespace

uint8_t* NpzBuffer::get(size_t n) {
  if (n > size_) {
    data_.reset();  // the old memory is not needed while the new is allocated
    data_.reset(new uint8_t[n]);  // not value-initialized: every byte is written before use
    size_ = n;
  }
  return data_.get();
}

void NpzReader::inflate_member(const Member& m, uint64_t start, uint8_t* out) {
  const size_t usize = static_cast<size_t>(m.uncompressed_size);
  if (m.method == 0) {
    ScopedPhase phase("file read");
    read_at(start, out, usize);
    return;
  }
  uint8_t* in = compressed_.get(static_cast<size_t>(m.compressed_size));
  {
    ScopedPhase phase("file read");
    read_at(start, in, static_cast<size_t>(m.compressed_size));
  }
  ScopedPhase phase("inflate");
  inflate_exact(in, static_cast<size_t>(m.compressed_size), out, usize);
}

NpyHeader NpzReader::parse_member_header(const Member& m, const ByteSource& next) {
  const uint64_t usize = m.uncompressed_size;
  uint8_t pre[12];
  size_t n0 = static_cast<size_t>(std::min<uint64_t>(usize, sizeof(pre)));
  next(pre, n0);
  size_t len = npy_header_len(pre, n0);
  if (len == 0) parse_npy_header(pre, n0);  // too short to tell: throws "truncated header"
  // A version 1.0 length field of 0 or 1 ends the header inside the bytes just read (no
  // real header is that short): without this check they would be copied past its end.
  if (len < n0)
    throw Error(fmt::format("malformed header: its length field leaves the header {} bytes, "
                            "less than its fixed preamble",
                            len));
  if (len > usize)
    throw Error(fmt::format("truncated header: member holds {} bytes, header needs {}", usize, len));
  std::vector<uint8_t> head(len);
  std::memcpy(head.data(), pre, n0);
  next(head.data() + n0, len - n0);
  NpyHeader h = parse_npy_header(head.data(), len);
  uint64_t need = 0;
  if (__builtin_add_overflow(h.nbytes(), h.header_len, &need) || need != usize)
    throw Error(fmt::format("header says shape {} of {} ({} data bytes + {} header bytes), but the "
                            "member holds {} bytes",
                            format_shape(h.shape), dtype_descr(h.dtype), h.nbytes(), h.header_len,
                            usize));
  return h;
}

namespace {

// Everything that can be checked before reading data: method, flags and whether the
// compressed bytes lie inside the file.
void check_member(const NpzReader::Member& m, uint64_t start, uint64_t file_size) {
  if (m.flags & 1) throw Error("encrypted members are not supported");
  if (m.method != 0 && m.method != 8)
    throw Error(fmt::format("unsupported compression method {}", m.method));
  if (start > file_size || m.compressed_size > file_size - start)
    throw Error(fmt::format("member data ({} bytes at offset {}) extends past the end of the "
                            "file ({} bytes; truncated?)",
                            m.compressed_size, start, file_size));
}

// Runs fn; an Error escaping it gets the archive's path and the member's key.
template <typename Fn>
auto with_context(const std::string& path, const std::string& key, Fn&& fn) {
  try {
    return fn();
  } catch (Error& e) {
    e.with_file(path).with_key(key);
    throw;
  }
}

}  // namespace


NpyHeader NpzReader::header(const std::string& key) {
  return with_context(path_, key, [&] {
    const Member& m = member(key);
    uint64_t start = data_offset(m);
    check_member(m, start, file_size_);
    check_declared_size(m);
    MemberStream s(*this, m, start);
    return parse_member_header(m, [&](uint8_t* dst, size_t n) { s.read(dst, n); });
  });
}

NpyHeader NpzReader::open_whole(const std::string& key, const Room& room, uint8_t** bytes) {
  const Member& m = member(key);
  uint64_t start = data_offset(m);
  check_member(m, start, file_size_);
  check_declared_size(m);
  const size_t usize = static_cast<size_t>(m.uncompressed_size);
  uint8_t* out = room(usize);
  inflate_member(m, start, out);
  size_t at = 0;  // parse_member_header never asks for more than the member's bytes
  NpyHeader h = parse_member_header(m, [&](uint8_t* dst, size_t n) {
    std::memcpy(dst, out + at, n);
    at += n;
  });
  // After the header, as when members were streamed: a damaged header is named as such.
  uint32_t crc = 0;
  {
    ScopedPhase phase("crc");
    crc = crc32_of(out, usize);
  }
  if (crc != m.crc32)
    throw Error(fmt::format("CRC mismatch (stored 0x{:08x}, computed 0x{:08x})", m.crc32, crc));
  *bytes = out;
  return h;
}

std::vector<uint8_t> NpzReader::read_stored(const std::string& key) {
  return with_context(path_, key, [&] {
    const Member& m = member(key);
    uint64_t start = data_offset(m);
    check_member(m, start, file_size_);
    std::vector<uint8_t> bytes(static_cast<size_t>(m.compressed_size));
    read_at(start, bytes.data(), bytes.size());
    return bytes;
  });
}

NpyArray NpzReader::read(const std::string& key) {
  return with_context(path_, key, [&] {
    NpyArray a;
    uint8_t* bytes = nullptr;
    NpyHeader h = open_whole(key, [&](size_t n) {
      a.data.resize(n);
      return a.data.data();
    }, &bytes);
    a.dtype = h.dtype;
    a.shape = h.shape;
    a.data.erase(a.data.begin(), a.data.begin() + static_cast<ptrdiff_t>(h.header_len));
    to_native_layout(h, a.data);
    return a;
  });
}

NpyHeader NpzReader::read_chunks(const std::string& key, const HeaderSink& on_header,
                                 const ChunkSink& on_chunk) {
  return with_context(path_, key, [&] {
    uint8_t* bytes = nullptr;
    NpyHeader h = open_whole(key, [&](size_t n) { return buffer_->get(n); }, &bytes);
    if (on_header) on_header(h);
    const size_t end = h.header_len + static_cast<size_t>(h.nbytes());
    if (h.needs_transpose()) {
      // Elements of one C-order chunk lie all over a Fortran-order member: reorder first.
      std::vector<uint8_t> all(bytes + h.header_len, bytes + end);
      to_native_layout(h, all);
      for (size_t at = 0; at < all.size(); at += kChunk) on_chunk(all.data() + at, std::min(kChunk, all.size() - at));
      return h;
    }
    const size_t elem = dtype_size(h.dtype);
    for (size_t at = h.header_len; at < end; at += kChunk) {
      size_t step = std::min(kChunk, end - at);
      if (h.big_endian) swap_element_bytes(bytes + at, step, elem);  // chunks hold whole elements
      on_chunk(bytes + at, step);
    }
    return h;
  });
}

}  // namespace tpuperf
