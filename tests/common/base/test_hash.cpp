// The content hash behind manifests and digests.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/base/hash.h"

using namespace tpuperf;

TEST(Hash, StableAndSensitive) {
  // Pinned digests: a change to the hash function would silently invalidate every
  // manifest already written, so it must show up here.
  EXPECT_EQ(hash_hex(""), "743719905ae6a46c");
  EXPECT_EQ(hash_hex("tpuperf"), "623620887e0f23de");
  std::string a(1000, 'a');
  EXPECT_EQ(hash_hex(a), hash_hex(std::string(1000, 'a')));
  EXPECT_NE(hash_hex(a), hash_hex(a + "b"));
  EXPECT_NE(hash_hex(""), hash_hex(std::string(1, '\0')));
  // Streaming in uneven pieces equals hashing at once.
  Hasher h;
  for (size_t i = 0; i < a.size(); i += 7) h.update(a.data() + i, std::min<size_t>(7, a.size() - i));
  EXPECT_EQ(h.hex(), hash_hex(a));
}
