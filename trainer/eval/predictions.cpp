#include "trainer/eval/predictions.h"

#include <cstring>

#include "common/base/error.h"

namespace tpuperf {

namespace {

constexpr char kMagic[4] = {'T', 'P', 'G', 'S'};
constexpr uint32_t kVersion = 1;

template <typename T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_string(std::string& out, const std::string& s) {
  put(out, static_cast<uint32_t>(s.size()));
  out += s;
}

// Bounds-checked reading: every read first checks that the bytes are there, so a
// truncated buffer is an Error, never a read past the end or a huge allocation.
class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  bool done() const { return pos_ == bytes_.size(); }
  size_t pos() const { return pos_; }

  void need(uint64_t n, const char* what) const {
    if (n > bytes_.size() - pos_)
      throw Error("prediction buffer truncated at byte " + std::to_string(pos_) + " of " +
                  std::to_string(bytes_.size()) + ": " + what + " needs " + std::to_string(n) +
                  " more bytes");
  }
  template <typename T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string get_string(const char* what) {
    const auto n = get<uint32_t>(what);
    need(n, what);
    std::string s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  template <typename T>
  std::vector<T> get_array(uint64_t n, const char* what) {
    if (n > (bytes_.size() - pos_) / sizeof(T))  // not n * sizeof(T): that may overflow
      throw Error("prediction buffer truncated at byte " + std::to_string(pos_) + " of " +
                  std::to_string(bytes_.size()) + ": " + what + " needs " + std::to_string(n) +
                  " values of " + std::to_string(sizeof(T)) + " bytes");
    std::vector<T> v(static_cast<size_t>(n));
    if (n > 0) std::memcpy(v.data(), bytes_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return v;
  }

 private:
  const std::string& bytes_;
  size_t pos_ = 0;
};

GraphScores read_record(Reader& r) {
  GraphScores g;
  g.collection = r.get_string("collection");
  g.split = r.get_string("split");
  g.name = r.get_string("name");
  g.model = r.get<int32_t>("model");
  const auto n = r.get<uint64_t>("config count");
  g.config_index = r.get_array<int64_t>(n, "config indices");
  g.score = r.get_array<double>(n, "scores");
  return g;
}

}  // namespace

std::string serialize_scores(const std::vector<GraphScores>& scores) {
  std::string out(kMagic, sizeof kMagic);
  put(out, kVersion);
  put(out, static_cast<uint64_t>(scores.size()));
  for (const auto& g : scores) {
    if (g.config_index.size() != g.score.size())
      throw Error(std::to_string(g.config_index.size()) + " config indices but " +
                      std::to_string(g.score.size()) + " scores",
                  "", g.key());
    put_string(out, g.collection);
    put_string(out, g.split);
    put_string(out, g.name);
    put(out, static_cast<int32_t>(g.model));
    put(out, static_cast<uint64_t>(g.score.size()));
    out.append(reinterpret_cast<const char*>(g.config_index.data()),
               g.config_index.size() * sizeof(int64_t));
    out.append(reinterpret_cast<const char*>(g.score.data()), g.score.size() * sizeof(double));
  }
  return out;
}

std::vector<GraphScores> deserialize_scores(const std::string& bytes) {
  std::vector<GraphScores> out;
  Reader r(bytes);
  while (!r.done()) {  // one block per serialized buffer
    const size_t start = r.pos();
    r.need(sizeof kMagic, "magic");
    if (std::memcmp(bytes.data() + start, kMagic, sizeof kMagic) != 0)
      throw Error("prediction buffer has no valid magic at byte " + std::to_string(start));
    r.get<uint32_t>("magic");
    const auto version = r.get<uint32_t>("version");
    if (version != kVersion)
      throw Error("prediction buffer version " + std::to_string(version) + " at byte " +
                  std::to_string(start) + " (this build reads version " +
                  std::to_string(kVersion) + ")");
    const auto count = r.get<uint64_t>("record count");
    for (uint64_t i = 0; i < count; ++i) out.push_back(read_record(r));
  }
  return out;
}

}  // namespace tpuperf
