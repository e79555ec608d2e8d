#include "common/formats/npy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "common/base/error.h"

namespace tpuperf {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;  // numpy's ARRAY_ALIGN
// numpy pads the dict so the first dimension can grow in place (GROWTH_AXIS_MAX_DIGITS).
constexpr size_t kGrowthDigits = 21;
// numpy itself refuses headers over 10000 bytes by default; 1 MiB still rejects a
// corrupted length field before anything large is read or allocated.
constexpr size_t kMaxHeaderLen = 1 << 20;

uint32_t load_le(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A recursive-descent reader of the one dict literal numpy writes. Python allows more
// (nested containers, escapes); numpy never writes those for the dtypes we support.
class DictParser {
 public:
  DictParser(const char* p, const char* end) : p_(p), end_(end) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      std::string key = parse_string();
      expect(':');
      if (key == "descr") {
        h.dtype = parse_descr(h.big_endian);
        have_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        h.shape = parse_shape();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') ++p_;
      else if (peek() != '}') fail("expected ',' or '}'");
    }
    ++p_;
    skip_space();
    if (p_ != end_) fail("unexpected text after the closing '}'");
    if (!have_descr) fail("no 'descr'");
    if (!have_order) fail("no 'fortran_order'");
    if (!have_shape) fail("no 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("malformed header dict: " + what);
  }
  void skip_space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\t' || *p_ == '\r')) ++p_;
  }
  char peek() {
    skip_space();
    if (p_ == end_) fail("ends early");
    return *p_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++p_;
  }
  std::string parse_string() {
    char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    const char* start = ++p_;
    while (p_ != end_ && *p_ != quote) {
      if (*p_ == '\\') fail("escapes in strings are not supported");
      ++p_;
    }
    if (p_ == end_) fail("unterminated string");
    return std::string(start, p_++);
  }
  bool parse_bool() {
    skip_space();
    for (const char* word : {"True", "False"}) {
      size_t n = std::strlen(word);
      if (static_cast<size_t>(end_ - p_) >= n && std::memcmp(p_, word, n) == 0) {
        p_ += n;
        return word[0] == 'T';
      }
    }
    fail("expected True or False");
  }
  // Little-endian descrs as dtype_descr() spells them, and their big-endian twins
  // (">i4" etc.; numpy writes one-byte types as "|u1" whatever the machine).
  DType parse_descr(bool& big_endian) {
    if (peek() == '[') throw Error("structured dtypes are not supported");
    std::string d = parse_string();
    static const DType all[] = {DType::U1, DType::B1, DType::I4, DType::I8, DType::F4, DType::F8};
    for (DType t : all) {
      std::string le = dtype_descr(t);
      big_endian = le[0] == '<' && d == ">" + le.substr(1);
      if (d == le || big_endian) return t;
    }
    throw Error("unsupported dtype '" + d + "' (supported: |u1 |b1 <i4 <i8 <f4 <f8 and >i4 >i8 >f4 >f8)");
  }
  std::vector<int64_t> parse_shape() {
    std::vector<int64_t> shape;
    expect('(');
    while (peek() != ')') {
      shape.push_back(parse_dim());
      if (peek() == ',') ++p_;
      else if (peek() != ')') fail("expected ',' or ')' in shape");
    }
    ++p_;
    return shape;
  }
  int64_t parse_dim() {
    skip_space();
    if (p_ != end_ && *p_ == '-') fail("negative dimension in shape");
    if (p_ == end_ || *p_ < '0' || *p_ > '9') fail("expected a dimension in shape");
    int64_t v = 0;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
      if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) throw Error("shape overflows: dimension too large");
      v = v * 10 + (*p_++ - '0');
    }
    if (p_ != end_ && *p_ == 'L') ++p_;  // Python 2 longs, as old numpy wrote them
    return v;
  }

  const char* p_;
  const char* end_;
};

std::string dict_literal(DType dtype, const std::vector<int64_t>& shape) {
  std::string d = "{'descr': '" + dtype_descr(dtype) + "', 'fortran_order': False, 'shape': " +
                  format_shape(shape) + ", }";
  if (!shape.empty()) d.append(kGrowthDigits - std::to_string(shape[0]).size(), ' ');
  return d;
}

}  // namespace

size_t dtype_size(DType t) {
  switch (t) {
    case DType::U1:
    case DType::B1: return 1;
    case DType::I4:
    case DType::F4: return 4;
    case DType::I8:
    case DType::F8: return 8;
  }
  return 0;
}

std::string dtype_descr(DType t) {
  switch (t) {
    case DType::U1: return "|u1";
    case DType::B1: return "|b1";
    case DType::I4: return "<i4";
    case DType::I8: return "<i8";
    case DType::F4: return "<f4";
    case DType::F8: return "<f8";
  }
  return "?";
}

std::string format_shape(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

int64_t shape_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("negative dimension in shape " + format_shape(shape));
    if (__builtin_mul_overflow(n, d, &n))
      throw Error("shape " + format_shape(shape) + " overflows a 64-bit element count");
  }
  return n;
}

int64_t NpyHeader::count() const { return shape_count(shape); }

uint64_t NpyHeader::nbytes() const {
  uint64_t n = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(count()), dtype_size(dtype), &n))
    throw Error("shape " + format_shape(shape) + " overflows a 64-bit byte count");
  return n;
}

std::string NpyHeader::descr() const {
  std::string d = dtype_descr(dtype);
  if (big_endian) d[0] = '>';
  return d;
}

bool NpyHeader::needs_transpose() const {
  if (!fortran_order) return false;
  int above_one = 0;
  for (int64_t d : shape) {
    if (d == 0) return false;  // no elements to move
    above_one += d > 1;
  }
  return above_one >= 2;
}

void swap_element_bytes(uint8_t* data, size_t n, size_t elem_size) {
  for (size_t at = 0; at + elem_size <= n; at += elem_size) std::reverse(data + at, data + at + elem_size);
}

namespace {

// dst (C order) from src (Fortran order): walks the C-order index like an odometer, last
// dimension fastest, keeping the element's Fortran offset up to date as it goes.
template <typename T>
void fortran_to_c(const T* src, T* dst, const std::vector<int64_t>& shape) {
  const size_t rank = shape.size();
  std::vector<int64_t> stride(rank), index(rank, 0);
  int64_t s = 1;
  for (size_t k = 0; k < rank; ++k) {  // Fortran strides: the first dimension varies fastest
    stride[k] = s;
    s *= shape[k];
  }
  const int64_t count = s;
  int64_t offset = 0;
  for (int64_t c = 0; c < count; ++c) {
    dst[c] = src[offset];
    for (size_t k = rank; k-- > 0;) {
      offset += stride[k];
      if (++index[k] < shape[k]) break;
      offset -= stride[k] * shape[k];
      index[k] = 0;
    }
  }
}

}  // namespace

void to_native_layout(const NpyHeader& h, std::vector<uint8_t>& data) {
  size_t size = dtype_size(h.dtype);
  if (h.big_endian && size > 1) swap_element_bytes(data.data(), data.size(), size);
  if (!h.needs_transpose()) return;
  std::vector<uint8_t> c_order(data.size());
  switch (size) {
    case 1: fortran_to_c(data.data(), c_order.data(), h.shape); break;
    case 4:
      fortran_to_c(reinterpret_cast<const uint32_t*>(data.data()), reinterpret_cast<uint32_t*>(c_order.data()),
                   h.shape);
      break;
    case 8:
      fortran_to_c(reinterpret_cast<const uint64_t*>(data.data()), reinterpret_cast<uint64_t*>(c_order.data()),
                   h.shape);
      break;
  }
  data.swap(c_order);
}

size_t npy_header_len(const uint8_t* data, size_t avail) {
  size_t check = std::min(avail, kMagicLen);
  if (std::memcmp(data, kMagic, check) != 0) throw Error("not an .npy array (bad magic)");
  if (avail < kMagicLen + 2) return 0;
  int major = data[6], minor = data[7];
  if (minor != 0 || major < 1 || major > 3)
    throw Error(fmt::format("unsupported .npy version {}.{}", major, minor));
  size_t len_bytes = major == 1 ? 2 : 4;
  if (avail < kMagicLen + 2 + len_bytes) return 0;
  size_t dict_len = load_le(data + 8, static_cast<int>(len_bytes));
  if (dict_len > kMaxHeaderLen)
    throw Error(fmt::format("header length {} exceeds the {} byte limit", dict_len, kMaxHeaderLen));
  return kMagicLen + 2 + len_bytes + dict_len;
}

NpyHeader parse_npy_header(const uint8_t* data, size_t avail) {
  size_t total = npy_header_len(data, avail);
  if (total == 0 || total > avail)
    throw Error(fmt::format("truncated header: {} bytes available, {} needed", avail,
                            total == 0 ? std::string("at least 12") : std::to_string(total)));
  size_t dict_start = data[6] == 1 ? 10 : 12;
  const char* begin = reinterpret_cast<const char*>(data + dict_start);
  NpyHeader h = DictParser(begin, reinterpret_cast<const char*>(data + total)).parse();
  h.header_len = total;
  h.version = data[6];
  h.nbytes();  // rejects shapes whose size overflows before anyone allocates
  return h;
}

std::string make_npy_header(DType dtype, const std::vector<int64_t>& shape, int min_version) {
  if (min_version < 1 || min_version > 3)
    throw Error(fmt::format("cannot write .npy version {}", min_version));
  std::string dict = dict_literal(dtype, shape);
  for (int version = min_version; version <= 3; ++version) {
    size_t len_bytes = version == 1 ? 2 : 4;
    size_t hlen = dict.size() + 1;  // + the closing '\n'
    size_t pad = kAlign - (kMagicLen + 2 + len_bytes + hlen) % kAlign;
    size_t field = hlen + pad;
    if (version == 1 && field > 0xFFFF) continue;
    std::string out(kMagic, kMagicLen);
    out += static_cast<char>(version);
    out += '\0';
    for (size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((field >> (8 * i)) & 0xFF);
    out += dict;
    out.append(pad, ' ');
    out += '\n';
    return out;
  }
  throw Error("npy header too long");
}

int64_t NpyArray::count() const { return shape_count(shape); }

namespace {

// One switch per array, not per element: the loop inside is a plain typed loop.
template <typename Fn>
void for_each_value(const NpyArray& a, Fn&& fn) {
  int64_t n = a.count();
  if (a.data.size() != static_cast<uint64_t>(n) * dtype_size(a.dtype))
    throw Error(fmt::format("array holds {} bytes, shape {} needs {}", a.data.size(),
                            format_shape(a.shape), static_cast<uint64_t>(n) * dtype_size(a.dtype)));
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* p = a.as<T>();
    for (int64_t i = 0; i < n; ++i) fn(i, p[i]);
  };
  switch (a.dtype) {
    case DType::U1: run(uint8_t{}); break;
    case DType::B1: run(uint8_t{}); break;  // numpy bools are one byte, 0 or 1
    case DType::I4: run(int32_t{}); break;
    case DType::I8: run(int64_t{}); break;
    case DType::F4: run(float{}); break;
    case DType::F8: run(double{}); break;
  }
}

}  // namespace

std::vector<float> NpyArray::to_float() const {
  std::vector<float> out(static_cast<size_t>(count()));
  for_each_value(*this, [&](int64_t i, auto v) { out[i] = static_cast<float>(v); });
  return out;
}

std::vector<int64_t> NpyArray::to_int64() const {
  std::vector<int64_t> out(static_cast<size_t>(count()));
  for_each_value(*this, [&](int64_t i, auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>) {
      // 2^63 is exact in float and double; anything at or above it does not fit.
      if (!(v == std::trunc(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0))
        throw Error(fmt::format("value {} at index {} is not an integer", v, i));
    }
    out[i] = static_cast<int64_t>(v);
  });
  return out;
}

template <typename T>
NpyArray NpyArray::from(const std::vector<T>& values, std::vector<int64_t> shape) {
  int64_t n = shape_count(shape);
  if (static_cast<uint64_t>(n) != values.size())
    throw Error(fmt::format("{} values do not fill shape {}", values.size(), format_shape(shape)));
  NpyArray a;
  a.dtype = dtype_of<T>();
  a.shape = std::move(shape);
  a.data.resize(values.size() * sizeof(T));
  if constexpr (std::is_same_v<T, bool>) {
    for (size_t i = 0; i < values.size(); ++i) a.data[i] = values[i] ? 1 : 0;
  } else if (!values.empty()) {
    std::memcpy(a.data.data(), values.data(), a.data.size());
  }
  return a;
}

template NpyArray NpyArray::from(const std::vector<uint8_t>&, std::vector<int64_t>);
template NpyArray NpyArray::from(const std::vector<bool>&, std::vector<int64_t>);
template NpyArray NpyArray::from(const std::vector<int32_t>&, std::vector<int64_t>);
template NpyArray NpyArray::from(const std::vector<int64_t>&, std::vector<int64_t>);
template NpyArray NpyArray::from(const std::vector<float>&, std::vector<int64_t>);
template NpyArray NpyArray::from(const std::vector<double>&, std::vector<int64_t>);

}  // namespace tpuperf
