// The featurizer's rules on small hand-built records (protobuf's generated classes write
// them): record kinds, names, opcode ids, feature columns, edges, node_splits, which runs
// and kernels are kept and how each rejection is named. Expected values are worked out
// by hand from /work/notes/featurizer_spec.md.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/base/error.h"
#include "common/graph/graph.h"
#include "pipeline/featurize/extra_features.h"
#include "pipeline/featurize/hlo_graph.h"
#include "pipeline/featurize/layout_records.h"
#include "pipeline/featurize/node_features.h"
#include "pipeline/featurize/opcodes.h"
#include "pipeline/featurize/record_scan.h"
#include "pipeline/featurize/tile_records.h"
#include "pipeline/featurize/tuning_records.pb.h"

using namespace tpuperf;
using namespace tpuperf::featurize;
using ::testing::HasSubstr;
namespace pb = tpuperf::records;

namespace {

std::vector<uint8_t> bytes_of(const google::protobuf::Message& m) {
  std::string s = m.SerializeAsString();
  return std::vector<uint8_t>(s.begin(), s.end());
}

pb::HloInstructionProto* add_inst(pb::HloComputationProto* comp, int64_t id, const std::string& opcode,
                                  std::vector<int64_t> operands = {}) {
  auto* inst = comp->add_instructions();
  inst->set_id(id);
  inst->set_name(opcode + "." + std::to_string(id));
  inst->set_opcode(opcode);
  inst->mutable_shape()->set_element_type(11);  // F32
  for (int64_t o : operands) inst->add_operand_ids(o);
  return inst;
}

// fused_computation (id 1): p0 (10), p1 (11), add (12, ROOT)
// entry main (id 2): a (20), b (21), fusion (22, ROOT) calling computation 1
pb::HloModuleProto small_module(const std::string& name = "fusion.1") {
  pb::HloModuleProto m;
  m.set_name(name);
  auto* fused = m.add_computations();
  fused->set_name("fused_computation");
  fused->set_id(1);
  fused->set_root_id(12);
  add_inst(fused, 10, "parameter");
  add_inst(fused, 11, "parameter")->set_parameter_number(1);
  add_inst(fused, 12, "add", {11, 10, 11});
  auto* entry = m.add_computations();
  entry->set_name("main");
  entry->set_id(2);
  entry->set_root_id(22);
  add_inst(entry, 20, "parameter");
  add_inst(entry, 21, "parameter")->set_parameter_number(1);
  add_inst(entry, 22, "fusion", {20, 21})->add_called_computation_ids(1);
  return m;
}

TEST(FeaturizeNames, SignedHexAsTheRelease) {
  EXPECT_EQ(signed_hex(0xe451d85be28f0b24ull), "-1bae27a41d70f4dc");  // alexnet_train_batch_32_...
  EXPECT_EQ(signed_hex(0x8000000000000000ull), "-8000000000000000");
  EXPECT_EQ(signed_hex(0xffffffffffffffffull), "-1");
  EXPECT_EQ(signed_hex(0), "0");
  EXPECT_EQ(signed_hex(0x579e7b2c540f0929ull), "579e7b2c540f0929");
}

TEST(FeaturizeOpcodes, UpstreamTable) {
  EXPECT_EQ(opcode_id("abs"), 1);
  EXPECT_EQ(opcode_id("get-tuple-element"), 45);
  EXPECT_EQ(opcode_id("trace"), 97);         // a tombstone, still in upstream's map
  EXPECT_EQ(opcode_id("tuple-select"), 101);
  EXPECT_EQ(opcode_id("round-nearest-even"), 118);
  EXPECT_EQ(opcode_id("tan"), 120);
  EXPECT_EQ(opcode_id("topk"), 0);  // newer than the release
  EXPECT_EQ(opcode_id("Add"), 0);   // case-sensitive
  EXPECT_EQ(opcode_id(""), 0);
  for (int id = 1; id <= kMaxOpcodeId; ++id) EXPECT_EQ(opcode_id(opcode_name(id)), id);
  EXPECT_EQ(opcode_name(0), "");
}

TEST(FeaturizeKind, ToldFromTheFields) {
  pb::ModuleTuningData layout;
  *layout.mutable_module() = small_module();
  layout.add_config_index_to_node(2);
  auto b = bytes_of(layout);
  EXPECT_EQ(detect_kind(b.data(), scan_top_level(b.data(), b.size())), RecordKind::Layout);

  pb::TuningData tile;
  *tile.add_modules()->mutable_module() = small_module();
  tile.mutable_modules(0)->set_fingerprint(7);
  b = bytes_of(tile);  // one field 1 whose payload has a varint field 2: a TuningData
  EXPECT_EQ(detect_kind(b.data(), scan_top_level(b.data(), b.size())), RecordKind::Tile);
  *tile.add_modules()->mutable_module() = small_module();
  b = bytes_of(tile);  // two fields 1
  EXPECT_EQ(detect_kind(b.data(), scan_top_level(b.data(), b.size())), RecordKind::Tile);

  pb::ModuleTuningData bare;  // a module holding only a name: either message could be it
  bare.mutable_module()->set_name("x");
  b = bytes_of(bare);
  auto top = scan_top_level(b.data(), b.size());
  EXPECT_THAT([&] { detect_kind(b.data(), top); }, ::testing::ThrowsMessage<Error>(HasSubstr("--kind")));
  TopLevel empty;
  EXPECT_THROW(detect_kind(nullptr, empty), Error);
}

TEST(FeaturizeKind, DamageIsReportedWithItsOffset) {
  pb::TuningData tile;
  for (int i = 0; i < 3; ++i) *tile.add_modules()->mutable_module() = small_module();
  auto b = bytes_of(tile);
  auto whole = scan_top_level(b.data(), b.size());
  ASSERT_EQ(whole.fields.size(), 3u);
  auto cut = scan_top_level(b.data(), b.size() - 5);
  EXPECT_TRUE(cut.damaged);
  EXPECT_EQ(cut.fields.size(), 2u);
  EXPECT_THAT(cut.damage, HasSubstr("field 1 at byte " + std::to_string(whole.fields[2].offset)));
  EXPECT_THAT(cut.damage, HasSubstr("the file ends"));
  std::vector<uint8_t> garbage = {0x0f, 0x01};  // wire type 7
  EXPECT_THAT(scan_top_level(garbage.data(), garbage.size()).damage, HasSubstr("wire type 7"));
}

TEST(FeaturizeGraph, NodesEdgesAndRoots) {
  HloGraph g = encode_module(small_module());
  ASSERT_EQ(g.num_nodes, 6);
  EXPECT_EQ(g.node_opcode, (std::vector<uint8_t>{63, 63, 2, 63, 63, 41}));
  // add (2) consumes its distinct operands 10, 11 -> nodes 0, 1; the fusion (5) consumes
  // 20, 21 -> 3, 4 and the fused computation's ROOT (2), never its parameters.
  EXPECT_EQ(g.edge_index, (std::vector<int64_t>{2, 0, 2, 1, 5, 2, 5, 3, 5, 4}));
  EXPECT_EQ(g.node_feat[2 * kNodeFeatDim], 1);  // is_root of the add
  EXPECT_EQ(g.node_feat[0 * kNodeFeatDim], 0);
  EXPECT_EQ(g.node_feat[1 * kNodeFeatDim + 30], 1);  // parameter_number
  EXPECT_EQ(g.node_splits, (std::vector<int64_t>{0, 6}));  // no cluster/while/cond computation
}

TEST(FeaturizeGraph, SplitsAfterClusterWhileAndCondSubstrings) {
  pb::HloModuleProto m = small_module();
  m.mutable_computations(0)->set_name("second_part");  // "cond" inside "second"
  EXPECT_EQ(encode_module(m).node_splits, (std::vector<int64_t>{0, 3, 6}));
  m.mutable_computations(1)->set_name("cluster_0");
  EXPECT_EQ(encode_module(m).node_splits, (std::vector<int64_t>{0, 3, 6}));  // n already last
}

TEST(FeaturizeGraph, BadReferencesAreNamed) {
  pb::HloModuleProto m = small_module();
  m.mutable_computations(1)->mutable_instructions(2)->add_operand_ids(99);
  EXPECT_THAT([&] { encode_module(m); },
              ::testing::ThrowsMessage<Error>(HasSubstr("'fusion.22' (id 22) in computation 'main': "
                                                        "operand id 99 is no instruction")));
  m = small_module();
  m.mutable_computations(1)->mutable_instructions(2)->add_called_computation_ids(5);
  EXPECT_THAT([&] { encode_module(m); },
              ::testing::ThrowsMessage<Error>(HasSubstr("called computation id 5 is no computation")));
  m = small_module();
  m.mutable_computations(1)->mutable_instructions(2)->add_called_computation_ids(1);
  EXPECT_THAT([&] { encode_module(m); }, ::testing::ThrowsMessage<Error>(HasSubstr("occurs twice")));
  m = small_module();
  m.mutable_computations(1)->mutable_instructions(2)->add_operand_ids(22);
  EXPECT_THAT([&] { encode_module(m); }, ::testing::ThrowsMessage<Error>(HasSubstr("self-edge")));
}

TEST(FeaturizeFeatures, SequencesSumsProductsAndOrder) {
  pb::HloComputationProto comp;
  comp.set_root_id(1);
  pb::HloInstructionProto inst;
  inst.set_id(1);
  inst.mutable_shape()->set_element_type(16);  // BF16: column 15
  for (int64_t d : {2, 3, 4, 5, 6, 7, 8}) inst.mutable_shape()->add_dimensions(d);
  for (int64_t d : {1, 0}) inst.mutable_shape()->mutable_layout()->add_minor_to_major(d);
  for (int i = 0; i < 2; ++i) {
    auto* w = inst.mutable_window()->add_dimensions();
    w->set_size(3);
    w->set_stride(i + 1);
    w->set_window_reversal(i == 0);
  }
  auto* s = inst.add_slice_dimensions();
  s->set_start(1);
  s->set_limit(9);
  s->set_stride(2);
  std::vector<float> f(kNodeFeatDim);
  instruction_features(inst, comp, f.data());
  EXPECT_EQ(f[0], 1);
  EXPECT_EQ(f[15], 1);
  EXPECT_EQ(f[13], 0);
  EXPECT_EQ(std::vector<float>(f.begin() + 21, f.begin() + 29),
            (std::vector<float>{2, 3, 4, 5, 6, 7, 35, 40320}));  // first 6, sum and product of all 7
  EXPECT_EQ(f[29], 0);                                          // no tuple members
  EXPECT_EQ(std::vector<float>(f.begin() + 37, f.begin() + 45), (std::vector<float>{3, 3, 0, 0, 0, 0, 6, 9}));
  EXPECT_EQ(std::vector<float>(f.begin() + 45, f.begin() + 53), (std::vector<float>{1, 2, 0, 0, 0, 0, 3, 2}));
  EXPECT_EQ(f[60], 0);  // padding_low product of (0, 0)
  EXPECT_EQ(std::vector<float>(f.begin() + 85, f.begin() + 93), (std::vector<float>{1, 0, 0, 0, 0, 0, 1, 1}));
  // Slices: start, then stride, then limit, each 2 values + sum + product.
  EXPECT_EQ(std::vector<float>(f.begin() + 109, f.begin() + 121),
            (std::vector<float>{1, 0, 1, 1, 2, 0, 2, 2, 9, 0, 9, 9}));
  EXPECT_EQ(f[124], 1);  // product of the empty dynamic_slice_sizes
  EXPECT_EQ(std::vector<float>(f.begin() + 134, f.begin() + 140), (std::vector<float>{1, 0, 0, 0, 0, 0}));
}

TEST(FeaturizeFeatures, Int64ArithmeticWrapsAndCastsToFloat32) {
  pb::HloComputationProto comp;
  pb::HloInstructionProto inst;
  inst.mutable_shape()->add_dimensions(int64_t{1} << 62);
  inst.mutable_shape()->add_dimensions(4);
  inst.mutable_shape()->add_dimensions(16777217);  // 2^24 + 1: float32 rounds it to 2^24
  std::vector<float> f(kNodeFeatDim);
  instruction_features(inst, comp, f.data());
  EXPECT_EQ(f[23], 16777216.0f);
  EXPECT_EQ(f[28], 0.0f);  // 2^62 * 4 wraps to 0 in int64, as upstream's int64_t does
  EXPECT_EQ(f[2], 1);      // no element type: PRIMITIVE_TYPE_INVALID
}

TEST(FeaturizeFeatures, TileConfigProductOfEmptyIsZero) {
  pb::TileSizeConfig c;
  for (int64_t v : {2, 4, 8}) c.add_kernel_bounds(v);
  std::vector<float> f(kTileConfigDim);
  tile_config_features(c, f.data());
  EXPECT_EQ(std::vector<float>(f.begin(), f.begin() + 8), (std::vector<float>{2, 4, 8, 0, 0, 0, 14, 64}));
  EXPECT_EQ(f[15], 0);  // empty output_bounds: product 0 here, unlike node features
  EXPECT_EQ(f[23], 0);
}

// ---- which kernels and runs are kept ----

pb::ConfigProfile* add_tile_run(pb::ModuleTuningData* k, int64_t ns, bool is_default = false) {
  auto* run = k->add_runs();
  run->mutable_op_config()->mutable_tile_size_config()->add_output_bounds(ns % 7 + 1);
  run->mutable_profile()->set_compute_time_ns(ns);
  run->set_is_default(is_default);
  return run;
}

pb::ModuleTuningData* add_kernel(pb::TuningData& td, const std::string& name, uint64_t fingerprint) {
  auto* k = td.add_modules();
  *k->mutable_module() = small_module(name);
  k->set_fingerprint(fingerprint);
  return k;
}

TileResult featurize_tile(const pb::TuningData& td) {
  auto b = bytes_of(td);
  return featurize_tuning_data(b.data(), scan_top_level(b.data(), b.size()), "prog", false);
}

std::vector<std::string> records_of(const std::vector<Rejection>& list) {
  std::vector<std::string> out;
  for (const auto& r : list) out.push_back(r.record + ": " + r.reason);
  return out;
}

TEST(FeaturizeTile, KeptRunsAndRejectedKernels) {
  pb::TuningData td;
  auto* good = add_kernel(td, "fusion.1", 1);
  add_tile_run(good, 100, true);
  add_tile_run(good, 90);
  add_tile_run(good, 80)->set_error(true);  // dropped quietly
  add_tile_run(good, 1);                    // 1 ns: rejected run
  add_tile_run(good, 70)->clear_profile();  // no profile: rejected run
  add_tile_run(add_kernel(td, "fusion.2", 2), 50, true);  // a single run
  auto* errored_default = add_kernel(td, "fusion.3", 3);
  add_tile_run(errored_default, 60, true)->set_error(true);
  add_tile_run(errored_default, 61);
  auto* no_config = add_kernel(td, "fusion.4", 4);
  add_tile_run(no_config, 40, true);
  add_tile_run(no_config, 41)->clear_op_config();
  auto* last = add_kernel(td, "fusion.5", 0xfffffffffffffffeull);
  add_tile_run(last, 30, true);
  add_tile_run(last, 31);

  TileResult r = featurize_tile(td);
  ASSERT_EQ(r.kernels.size(), 2u);
  const TileGraph& g = r.kernels[0].graph;
  EXPECT_EQ(g.name, "prog_1");
  EXPECT_EQ(g.config_runtime, (std::vector<int64_t>{100, 90}));
  EXPECT_EQ(g.config_runtime_normalizers, (std::vector<int64_t>{100, 100}));
  EXPECT_EQ(r.kernels[1].graph.name, "prog_-2");
  EXPECT_EQ(r.counts.kernels, 5);
  EXPECT_EQ(r.counts.error_runs, 2);
  EXPECT_THAT(records_of(r.rejected),
              ::testing::ElementsAre(
                  "kernel 0 (fusion.1) run 3: runtime of 1 ns (a kept run needs more than 1 ns)",
                  "kernel 0 (fusion.1) run 4: no profile (no runtime measured)",
                  HasSubstr("kernel 1 (fusion.2): 1 run: ranking needs at least 2"),
                  "kernel 2 (fusion.3): no default run among the kept runs (run 0 is the default, "
                  "but it has an error)",
                  HasSubstr("kernel 3 (fusion.4): run 1 has no tile_size_config")));
}

TEST(FeaturizeTile, SameModuleNameSharesTheLaterNormalizer) {
  pb::TuningData td;
  for (uint64_t fp : {1, 2}) {
    auto* k = add_kernel(td, "fusion.7", fp);
    add_tile_run(k, 100 * fp, true);
    add_tile_run(k, 100 * fp + 1);
  }
  TileResult r = featurize_tile(td);
  ASSERT_EQ(r.kernels.size(), 2u);
  // Upstream stores normalizers in a map keyed by module name: the later kernel's wins.
  EXPECT_EQ(r.kernels[0].graph.config_runtime_normalizers, (std::vector<int64_t>{200, 200}));
  EXPECT_EQ(r.kernels[1].graph.config_runtime_normalizers, (std::vector<int64_t>{200, 200}));
}

TEST(FeaturizeTile, ACutRecordKeepsTheKernelsBeforeTheCut) {
  pb::TuningData td;
  for (uint64_t fp : {1, 2, 3}) {
    auto* k = add_kernel(td, "fusion." + std::to_string(fp), fp);
    add_tile_run(k, 10, true);
    add_tile_run(k, 11);
  }
  auto b = bytes_of(td);
  auto top = scan_top_level(b.data(), b.size() - 3);
  TileResult r = featurize_tuning_data(b.data(), top, "prog", false);
  ASSERT_EQ(r.kernels.size(), 2u);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].record, "kernel 2 and any after it");
  EXPECT_THAT(r.rejected[0].reason, HasSubstr("truncated or garbled record: field 1 at byte"));
}

// ---- layout ----

pb::ConfigProfile* add_layout_run(pb::ModuleTuningData& m, int64_t ns, std::vector<std::vector<int>> dims,
                                  bool is_default = false) {
  auto* run = m.add_runs();
  auto* node = run->mutable_module_config()->mutable_layout_config()->add_nodes();
  for (const auto& t : dims) {
    auto* tensor = node->add_tensors();
    for (int d : t) tensor->add_dims(d);
  }
  run->mutable_profile()->set_compute_time_ns(ns);
  run->set_is_default(is_default);
  return run;
}

LayoutResult featurize_layout(const pb::ModuleTuningData& m) {
  auto b = bytes_of(m);
  return featurize_module_tuning_data(b.data(), b.size(), scan_top_level(b.data(), b.size()), "mod", false);
}

TEST(FeaturizeLayout, ConfigRowsAndRejectedRuns) {
  pb::ModuleTuningData m;
  *m.mutable_module() = small_module("main");
  m.add_config_index_to_node(2);
  add_layout_run(m, 500, {{0}, {}, {1, 0}}, true);
  add_layout_run(m, 400, {{1, 0, 2, 3, 4, 5, 4}});  // more than 6 dims: the first 6 count
  add_layout_run(m, 300, {{7}});                    // outside -1..5: rejected run
  add_layout_run(m, 200, {{0}, {0}, {0}, {0}});     // 4 tensors: rejected run
  add_layout_run(m, 100, {{0}})->clear_profile();   // no profile: rejected run
  add_layout_run(m, 90, {{0}})->set_error(true);    // dropped quietly
  LayoutResult r = featurize_layout(m);
  ASSERT_TRUE(r.module.has_value());
  const LayoutGraph& g = r.module->graph;
  EXPECT_EQ(g.config_runtime, (std::vector<int64_t>{500, 400}));
  EXPECT_EQ(g.node_config_ids, (std::vector<int64_t>{2}));
  EXPECT_EQ(g.node_config_feat,
            (std::vector<int8_t>{0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 0, -1, -1, -1, -1,
                                 1, 0, 2, 3, 4, 5, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}));
  EXPECT_THAT(records_of(r.rejected),
              ::testing::ElementsAre(HasSubstr("module main run 2: config node 0 tensor 0 holds layout value 7"),
                                     HasSubstr("module main run 3: config node 0 has 4 tensor layouts"),
                                     "module main run 4: no profile (no runtime measured)"));
}

TEST(FeaturizeLayout, WholeModuleRejections) {
  pb::ModuleTuningData m;
  *m.mutable_module() = small_module("main");
  m.add_config_index_to_node(6);  // the module has nodes 0..5
  add_layout_run(m, 500, {{0}}, true);
  add_layout_run(m, 400, {{0}});
  LayoutResult r = featurize_layout(m);
  EXPECT_FALSE(r.module.has_value());
  EXPECT_THAT(records_of(r.rejected),
              ::testing::ElementsAre("module main: config_index_to_node[0] = 6 names no node: the module has 6"));

  m.set_config_index_to_node(0, 2);
  m.mutable_runs(0)->set_is_default(false);
  r = featurize_layout(m);
  EXPECT_FALSE(r.module.has_value());
  EXPECT_THAT(records_of(r.rejected), ::testing::ElementsAre(HasSubstr("module main: no run is marked is_default")));

  m.mutable_runs(0)->set_is_default(true);
  m.add_config_index_to_node(2);  // node 2 configured twice: common's validate() says no
  for (auto& run : *m.mutable_runs()) {
    auto* layout = run.mutable_module_config()->mutable_layout_config();
    *layout->add_nodes() = layout->nodes(0);
  }
  r = featurize_layout(m);
  EXPECT_FALSE(r.module.has_value());
  EXPECT_THAT(records_of(r.rejected), ::testing::Contains(HasSubstr("appears twice")));
}

// ---- --extra-features ----

TEST(FeaturizeExtra, ColumnsOnAHandBuiltModule) {
  // inner (id 1): x (10, ROOT); middle (id 2): call (20, ROOT) calling inner, p (21);
  // entry (id 3): a (30), b (31), fusion (32) calling middle, dot (33, ROOT).
  pb::HloModuleProto m;
  m.set_entry_computation_id(3);
  auto* inner = m.add_computations();
  inner->set_id(1);
  inner->set_root_id(10);
  inner->set_is_fusion_computation(true);
  add_inst(inner, 10, "constant");
  auto* middle = m.add_computations();
  middle->set_id(2);
  middle->set_root_id(20);
  add_inst(middle, 20, "call")->add_called_computation_ids(1);
  add_inst(middle, 21, "parameter");
  auto* entry = m.add_computations();
  entry->set_id(3);
  entry->set_root_id(33);
  auto* a = add_inst(entry, 30, "parameter");
  a->mutable_shape()->set_element_type(16);  // BF16, 2 bytes
  for (int64_t d : {8, 128}) a->mutable_shape()->add_dimensions(d);
  for (int64_t d : {0, 1}) a->mutable_shape()->mutable_layout()->add_minor_to_major(d);
  a->mutable_shape()->mutable_layout()->set_memory_space(1);
  auto* tile = a->mutable_shape()->mutable_layout()->add_tiles();
  for (int64_t d : {8, 128}) tile->add_dimensions(d);
  a->mutable_shape()->add_is_dynamic_dimension(true);
  a->mutable_shape()->add_is_dynamic_dimension(false);
  auto* b = add_inst(entry, 31, "parameter");
  b->mutable_shape()->set_element_type(13);  // a tuple of (f32[3], (s8[5, 7]))
  auto* t0 = b->mutable_shape()->add_tuple_shapes();
  t0->set_element_type(11);
  t0->add_dimensions(3);
  auto* t1 = b->mutable_shape()->add_tuple_shapes()->add_tuple_shapes();
  t1->set_element_type(2);
  t1->add_dimensions(5);
  t1->add_dimensions(7);
  auto* fusion = add_inst(entry, 32, "fusion", {30, 30, 31});
  fusion->add_called_computation_ids(2);
  fusion->set_fusion_kind("kOutput");
  fusion->add_control_predecessor_ids(31);
  auto* dot = add_inst(entry, 33, "dot", {31, 30});
  dot->mutable_dot_dimension_numbers()->add_lhs_contracting_dimensions(1);
  dot->mutable_dot_dimension_numbers()->add_lhs_batch_dimensions(0);
  dot->mutable_precision_config()->add_operand_precision(0);
  dot->mutable_precision_config()->add_operand_precision(2);

  std::vector<float> x = extra_node_features(m);
  ASSERT_EQ(x.size(), 7u * kExtraNodeFeatDim);
  auto at = [&](int node, int col) { return x[node * kExtraNodeFeatDim + col]; };
  // Node order: x 0, call 1, p 2, a 3, b 4, fusion 5, dot 6.
  EXPECT_EQ(at(5, 2), 1);                               // kOutput
  EXPECT_EQ(at(5, 5), 3);                               // operands with the repeat
  EXPECT_EQ(at(5, 6), 2);                               // distinct
  EXPECT_EQ(at(3, 7), 2);                               // a: used by the fusion and the dot
  EXPECT_EQ(at(5, 9), 2);                               // middle holds 2 instructions
  EXPECT_EQ(at(5, 10), 3);                              // middle and, through it, inner
  EXPECT_EQ(at(1, 10), 1);
  EXPECT_EQ(at(5, 11), 1);                              // in the entry computation
  EXPECT_EQ(at(1, 11), 0);
  EXPECT_EQ(at(0, 12), 1);                              // inner is a fusion computation
  EXPECT_EQ(at(3, 13), 2);                              // rank
  EXPECT_EQ(at(3, 14), 8 * 128 * 2);                    // bytes of bf16[8, 128]
  EXPECT_EQ(at(4, 14), 3 * 4 + 35);                     // tuple: f32[3] and s8[5, 7]
  EXPECT_EQ(at(4, 15), 2);                              // leaves
  EXPECT_EQ(at(4, 16), 2);                              // the largest leaf rank
  EXPECT_EQ(at(3, 16), -1);                             // not a tuple
  EXPECT_EQ(at(3, 17), 1);                              // one dynamic dimension
  EXPECT_EQ(at(3, 18), 1);                              // one tile
  EXPECT_EQ(at(3, 19), 8);
  EXPECT_EQ(at(3, 20), 128);
  EXPECT_EQ(at(3, 21), 1);                              // memory space
  EXPECT_EQ(std::vector<float>(x.begin() + 6 * kExtraNodeFeatDim + 22, x.begin() + 6 * kExtraNodeFeatDim + 34),
            (std::vector<float>{-1, -1, -1, -1, -1, -1, 0, 1, -1, -1, -1, -1}));  // operands b, a
  EXPECT_EQ(at(6, 34), 1);                              // b: a tuple has no dimensions
  EXPECT_EQ(at(6, 35), 1024);
  EXPECT_EQ(at(6, 36), 13);
  EXPECT_EQ(at(6, 37), 16);
  EXPECT_EQ(at(3, 34), -1);                             // a parameter has no operand 0
  EXPECT_EQ(at(6, 42), 1);                              // lhs contracting dimension
  EXPECT_EQ(at(6, 43), -1);                             // no rhs one
  EXPECT_EQ(at(6, 44), 1);                              // one batch dimension
  EXPECT_EQ(at(6, 52), 2);                              // HIGHEST
  EXPECT_EQ(at(5, 53), 1);                              // one control predecessor
  EXPECT_EQ(at(6, 4), -1);                              // not a get-tuple-element
}

}  // namespace
