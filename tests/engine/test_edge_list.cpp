// SNAP edge lists and .jlg files into neighbour sets: formats, line ends, comments, gzip,
// duplicates, self-loops, every error with its line, the memory refusal, and the CSR cache.
#include <gtest/gtest.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "privrace/core/error.hpp"
#include "privrace/io/edge_list.hpp"
#include "test_util.hpp"

using namespace privrace;
namespace fs = std::filesystem;

namespace {

class EdgeList : public ::testing::Test {
 protected:
  void SetUp() override { dir = privrace::testing::temp_dir("edge_list"); }
  void TearDown() override { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  }
  std::string write_gz(const std::string& name, const std::string& text) {
    const std::string p = (dir / name).string();
    gzFile f = gzopen(p.c_str(), "wb");
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
    return p;
  }
  static std::vector<std::uint32_t> set(const SetCollection& s, std::size_t i) {
    const auto v = s.set(i);
    return {v.begin(), v.end()};
  }
  template <typename E>
  static std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const E& e) {
      return e.what();
    }
    return "(no error)";
  }
  fs::path dir;
};

using V = std::vector<std::uint32_t>;

}  // namespace

TEST_F(EdgeList, SnapWithCommentsCrlfSeparatorsDuplicatesAndSelfLoops) {
  const std::string text =
      "# Directed graph: test.txt\r\n# Nodes: 5 Edges: 7\r\n# FromNodeId\tToNodeId\r\n"
      "0\t1\r\n0\t2\r\n0 1\r\n\r\n2,0\r\n3\t3\r\n  1\t4  \r\n% a KONECT-style comment\r\n2\t1";  // no final line end
  EdgeListReport rep;
  const SetCollection g = read_edge_list(write("g.txt", text), {}, &rep);
  ASSERT_EQ(g.size(), 5u);
  EXPECT_EQ(set(g, 0), (V{1, 2}));
  EXPECT_EQ(set(g, 1), (V{4}));
  EXPECT_EQ(set(g, 2), (V{0, 1}));
  EXPECT_EQ(set(g, 3), (V{3}));  // self-loop kept by default
  EXPECT_EQ(set(g, 4), (V{}));
  EXPECT_EQ(rep.lines, 7u);
  EXPECT_EQ(rep.duplicates, 1u);
  EXPECT_EQ(rep.self_loops, 1u);
  EXPECT_EQ(rep.edges, 6u);
  EXPECT_EQ(rep.max_degree, 2u);
  EXPECT_EQ(rep.empty_sets, 1u);
  EXPECT_EQ(rep.declared_nodes, 5u);
  EXPECT_EQ(rep.declared_edges, 7u);
}

TEST_F(EdgeList, LoneCrLineEndsAndGzipGiveTheSameGraph) {
  const std::string lf = "0 1\n1 2\n2 0\n0 2\n";
  std::string cr = lf;
  std::replace(cr.begin(), cr.end(), '\n', '\r');
  const SetCollection a = read_edge_list(write("lf.txt", lf));
  const SetCollection b = read_edge_list(write("cr.txt", cr));
  const SetCollection c = read_edge_list(write_gz("gz.txt.gz", lf));
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.ids, c.ids);
  EXPECT_EQ(a.offsets, c.offsets);
}

TEST_F(EdgeList, LargeGzipCrossesBlockBoundariesWithCrlf) {
  // > 1 MiB of text so lines (and CR LF pairs) straddle the 1 MiB read blocks.
  std::string text;
  std::vector<std::vector<std::uint32_t>> expect(1000);
  for (std::uint32_t i = 0; i < 150000; ++i) {
    const std::uint32_t u = (i * 7919u) % 1000u, v = (i * 104729u + 13u) % 1000u;
    text += std::to_string(u) + "\t" + std::to_string(v) + "\r\n";
    expect[u].push_back(v);
  }
  const SetCollection g = read_edge_list(write_gz("big.txt.gz", text));
  ASSERT_EQ(g.size(), 1000u);
  for (std::uint32_t u = 0; u < 1000; ++u) {
    auto& e = expect[u];
    std::sort(e.begin(), e.end());
    e.erase(std::unique(e.begin(), e.end()), e.end());
    EXPECT_EQ(set(g, u), e);
  }
}

TEST_F(EdgeList, SymmetriseAndDropSelfLoops) {
  // Pair 0-1 listed in both directions, 1-2 once, a self-loop on 2.
  const std::string p = write("u.txt", "0 1\n1 0\n1 2\n2 2\n");
  EdgeListReport rep;
  const SetCollection g = read_edge_list(p, {.symmetrise = true, .keep_self_loops = false}, &rep);
  EXPECT_EQ(set(g, 0), (V{1}));
  EXPECT_EQ(set(g, 1), (V{0, 2}));
  EXPECT_EQ(set(g, 2), (V{1}));
  EXPECT_EQ(rep.self_loops, 1u);
  EXPECT_EQ(rep.duplicates, 0u);  // the mirrored copy of 0-1 is not a duplicate line
  EXPECT_TRUE(rep.symmetrised);
}

TEST_F(EdgeList, JlgHeaderOneBasedIdsAndUndirected) {
  const std::string p = write_gz("g.jlg", "4,3,u,graph\n1,2\n2,3\n4,4\n");
  EdgeListReport rep;
  const SetCollection g = read_edge_list(p, {}, &rep);
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(set(g, 0), (V{1}));
  EXPECT_EQ(set(g, 1), (V{0, 2}));
  EXPECT_EQ(set(g, 2), (V{1}));
  EXPECT_EQ(set(g, 3), (V{3}));
  EXPECT_EQ(rep.declared_nodes, 4u);
  EXPECT_TRUE(rep.symmetrised);
  EXPECT_NE(error_of<InputError>([&] { read_edge_list(write_gz("z.jlg", "3,1,d,g\n0,1\n")); }).find("1-based"), std::string::npos);
  const std::string beyond = error_of<InputError>([&] { read_edge_list(write_gz("b.jlg", "3,2,d,g\n1,2\n2,4\n")); });
  EXPECT_NE(beyond.find("b.jlg:3:"), std::string::npos) << beyond;
  EXPECT_NE(beyond.find("beyond the declared range (1..3)"), std::string::npos) << beyond;
  EXPECT_NE(error_of<InputError>([&] { read_edge_list(write_gz("h.jlg", "1,2\n")); }).find("header"), std::string::npos);
}

TEST_F(EdgeList, MalformedLinesNameFileLineAndWhatWasFound) {
  const std::string p = write("bad.txt", "# c\n0 1\n2 x7\n");
  const std::string e = error_of<InputError>([&] { read_edge_list(p); });
  EXPECT_NE(e.find("bad.txt:3:"), std::string::npos) << e;
  EXPECT_NE(e.find("'x7'"), std::string::npos) << e;
  const std::string one = error_of<InputError>([&] { read_edge_list(write("one.txt", "0 1\r\n5\r\n")); });
  EXPECT_NE(one.find("one.txt:2:"), std::string::npos) << one;
  EXPECT_NE(one.find("two node ids"), std::string::npos) << one;
  const std::string neg = error_of<InputError>([&] { read_edge_list(write("neg.txt", "0 -1\n")); });
  EXPECT_NE(neg.find("'-1'"), std::string::npos) << neg;
  const std::string huge = error_of<InputError>([&] { read_edge_list(write("huge.txt", "0 4294967295\n")); });
  EXPECT_NE(huge.find("32 bits"), std::string::npos) << huge;
}

TEST_F(EdgeList, IdsBeyondTheDeclaredCount) {
  const std::string p = write("r.txt", "0 1\n1 9\n");
  const std::string e = error_of<InputError>([&] { read_edge_list(p, {.declared_nodes = 5}); });
  EXPECT_NE(e.find("r.txt:2:"), std::string::npos) << e;
  EXPECT_NE(e.find("node id 9 is beyond the declared range (0..4)"), std::string::npos) << e;
  // Without a declared count the graph grows to the largest id; unused ids are empty sets.
  EXPECT_EQ(read_edge_list(p).size(), 10u);
  EXPECT_EQ(read_edge_list(write("s.txt", "0 1\n"), {.declared_nodes = 5}).size(), 5u);
}

TEST_F(EdgeList, EmptyGraphIsAnError) {
  for (const std::string text : {"", "# only comments\n# Nodes: 0 Edges: 0\n", "\n\n"}) {
    const std::string e = error_of<InputError>([&] { read_edge_list(write("e.txt", text)); });
    EXPECT_NE(e.find("empty graph"), std::string::npos) << e;
  }
  EXPECT_NE(error_of<InputError>([&] { read_edge_list((dir / "missing.txt").string()); }).find("cannot open"), std::string::npos);
}

TEST_F(EdgeList, TooLargeIsRefusedWithAnEstimateBeforeAllocating) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += std::to_string(i) + " " + std::to_string(i + 1) + "\n";
  const std::string e = error_of<ResourceError>([&] { read_edge_list(write("l.txt", text), {.memory_limit = 20000}); });
  EXPECT_NE(e.find("needs about"), std::string::npos) << e;
  // A huge id means a huge offsets array: refused, not attempted.
  const std::string id = error_of<ResourceError>([&] { read_edge_list(write("i.txt", "0 4000000000\n"), {.memory_limit = 1u << 30}); });
  EXPECT_NE(id.find("MiB"), std::string::npos) << id;
  // A .jlg header declaring too many edges is refused before reading them.
  const std::string hdr = error_of<ResourceError>([&] { read_edge_list(write_gz("h.jlg", "10,100000000,d,g\n1,2\n"), {.memory_limit = 1u << 26}); });
  EXPECT_NE(hdr.find("100000000 edges"), std::string::npos) << hdr;
}

TEST_F(EdgeList, CsrCacheRoundTripAndStaleness) {
  const std::string src = write("c.txt", "0 1\n0 2\n1 2\n2 0\n");
  const std::string cache = (dir / "c.csr").string();
  bool hit = true;
  EdgeListReport r1, r2;
  const SetCollection a = read_edge_list_cached(src, cache, {}, &r1, &hit);
  EXPECT_FALSE(hit);
  ASSERT_TRUE(fs::exists(cache));
  const SetCollection b = read_edge_list_cached(src, cache, {}, &r2, &hit);
  EXPECT_TRUE(hit);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(r1.edges, r2.edges);
  EXPECT_EQ(r1.lines, r2.lines);
  // Other options: the cache does not apply.
  SetCollection tmp;
  EXPECT_FALSE(read_csr_cache(cache, src, {.symmetrise = true}, tmp));
  // The source changes (size and mtime): stale, re-parsed, rewritten.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write("c.txt", "0 1\n0 2\n1 2\n2 0\n3 0\n");
  EXPECT_FALSE(read_csr_cache(cache, src, {}, tmp));
  const SetCollection c = read_edge_list_cached(src, cache, {}, nullptr, &hit);
  EXPECT_FALSE(hit);
  EXPECT_EQ(c.size(), 4u);
  EXPECT_TRUE(read_csr_cache(cache, src, {}, tmp));
  // A corrupt cache is reported by the low-level reader and rebuilt by the cached reader.
  {
    std::fstream f(cache, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-6, std::ios::end);
    f.put('\x5a');
  }
  EXPECT_THROW(read_csr_cache(cache, src, {}, tmp), InputError);
  const SetCollection d = read_edge_list_cached(src, cache, {}, nullptr, &hit);
  EXPECT_FALSE(hit);
  EXPECT_EQ(d.ids, c.ids);
  // Truncated cache.
  fs::resize_file(cache, 30);
  EXPECT_THROW(read_csr_cache(cache, src, {}, tmp), InputError);
}

TEST_F(EdgeList, TransposeGivesInNeighbours) {
  const SetCollection g = read_edge_list(write("t.txt", "0 1\n0 2\n1 2\n3 0\n"));
  const SetCollection t = transpose_sets(g, g.size());
  EXPECT_EQ(set(t, 0), (V{3}));
  EXPECT_EQ(set(t, 1), (V{0}));
  EXPECT_EQ(set(t, 2), (V{0, 1}));
  EXPECT_EQ(set(t, 3), (V{}));
}
