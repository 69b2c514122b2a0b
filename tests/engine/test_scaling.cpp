// Thread-count invariance of the parallel stages: the build (with and without pre-faulted
// sub-sketches), the block-stream noise, the parallel encoder and its gathering write, and
// the parallel queries. Every stage must give the same bytes on 1, 2, 3 and 8 threads.
#include <gtest/gtest.h>
#include <omp.h>
#include <zlib.h>
#include <zstd.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sys/wait.h>

#include "privrace/io/sketch_file.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "privrace/sketch/builder.hpp"
#include "privrace/sketch/privatize.hpp"
#include "privrace/sketch/race_sketch.hpp"
#include "privrace/sketch/release_record.hpp"
#include "test_util.hpp"

using namespace privrace;

namespace {
std::shared_ptr<const LshFamily> l2_family(std::size_t rows, std::size_t dim, double bandwidth, std::uint64_t seed = 11) {
  return make_family(FamilySpec{.kernel = Kernel::L2, .bandwidth = bandwidth, .rows = rows, .dim = dim, .seed = seed});
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs f with the OpenMP default thread count set to t (privatize and the encoder use it).
template <typename F>
auto with_threads(int t, F&& f) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(t);
  auto out = f();
  omp_set_num_threads(before);
  return out;
}

// The version 2 container written by an independent, serial encoder straight from its
// specification (sketch_file.hpp): the parallel writer must produce exactly these bytes.
std::string reference_file(const nlohmann::json& header, std::span<const std::int64_t> counts) {
  auto put = [](std::string& out, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  };
  constexpr std::size_t kBlock = std::size_t{1} << 20;
  const std::size_t blocks = (counts.size() + kBlock - 1) / kBlock;
  std::string table, data;
  put(table, counts.size(), 8);
  put(table, blocks, 8);
  for (std::size_t b = 0; b < blocks; ++b) {
    const auto part = counts.subspan(b * kBlock, std::min(kBlock, counts.size() - b * kBlock));
    std::vector<std::uint64_t> z(part.size());
    std::uint64_t top = 0;
    for (std::size_t i = 0; i < part.size(); ++i) {
      z[i] = (static_cast<std::uint64_t>(part[i]) << 1) ^ static_cast<std::uint64_t>(part[i] >> 63);
      top |= z[i];
    }
    unsigned planes = 0;
    while (planes < 8 && (top >> (8 * planes)) != 0) ++planes;
    std::string raw(part.size() * planes, '\0');
    for (unsigned p = 0; p < planes; ++p)
      for (std::size_t i = 0; i < part.size(); ++i) raw[p * part.size() + i] = static_cast<char>(z[i] >> (8 * p));
    std::string out(ZSTD_compressBound(raw.size()), '\0');
    const std::size_t got = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), 1);
    out.resize(got);
    table.push_back(static_cast<char>(planes));
    put(table, out.size(), 8);
    data += out;
  }
  const std::string text = header.dump();
  std::string file = "PRIVRACE";
  put(file, kSketchFileVersion, 4);
  put(file, text.size(), 8);
  file += text;
  put(file, table.size() + data.size(), 8);
  file += table;
  file += data;
  const uLong crc = crc32_z(0L, reinterpret_cast<const Bytef*>(file.data()), file.size());
  put(file, crc, 4);
  return file;
}
}  // namespace

TEST(Scaling, BuildCountsAndStagesForAnyThreadCountWithAndWithoutPrefault) {
  const DenseMatrix data = privrace::testing::clustered_points(9000, 3, 21);
  const auto family = l2_family(24, 3, 1.5);
  RaceSketch reference(family, 301);
  build_dense(reference, data, {.threads = 1, .batch = 500});
  for (const int threads : {2, 3, 8})
    for (const bool prefault : {true, false}) {
      RaceSketch s(family, 301);
      const BuildReport r = build_dense(s, data, {.threads = threads, .batch = 500, .strategy = BuildStrategy::Replicate, .prefault_partials = prefault});
      EXPECT_TRUE(std::equal(s.counts().begin(), s.counts().end(), reference.counts().begin())) << threads << " " << prefault;
      EXPECT_EQ(s.records(), 9000);
      EXPECT_GT(r.stages.fill, 0.0);
      EXPECT_GT(r.stages.fill_thread_max, 0.0);
      EXPECT_LE(r.stages.fill_thread_mean, r.stages.fill_thread_max);
      EXPECT_GE(r.stages.allocate, 0.0);
      EXPECT_GE(r.stages.merge, 0.0);
      EXPECT_NEAR(r.seconds, r.stages.allocate + r.stages.validate + r.stages.fill + r.stages.merge, 1e-6);
    }
  // A builder over a target that already holds counts keeps them (the pre-fault changes nothing).
  RaceSketch twice(family, 301);
  build_dense(twice, data, {.threads = 3});
  build_dense(twice, data, {.threads = 3});
  for (std::size_t i = 0; i < twice.counts().size(); ++i) ASSERT_EQ(twice.counts()[i], 2 * reference.counts()[i]) << i;
}

TEST(Scaling, SeededNoiseAndFileAreByteIdenticalForAnyThreadCount) {
  const auto dir = privrace::testing::temp_dir("scaling_noise");
  const DenseMatrix data = privrace::testing::clustered_points(3000, 2, 22);
  // 3 x 100,003 = 300,009 counts: the table sampler (>= 2^18 counts), five noise blocks with a
  // partial last one, fewer rows than threads, and a row that spans block boundaries.
  const auto family = l2_family(3, 2, 1.0);
  for (const NoiseMechanism mechanism : {NoiseMechanism::DiscreteLaplace, NoiseMechanism::Gaussian, NoiseMechanism::FlooredLaplace,
                                         NoiseMechanism::DiscreteGaussian}) {
    const PrivacySpec spec{.epsilon = 1.0, .delta = is_gaussian(mechanism) ? 1e-6 : 0.0, .mechanism = mechanism};
    std::string reference_bytes;
    std::vector<std::int64_t> reference_counts;
    for (const int threads : {1, 2, 3, 8}) {
      const std::string path = (dir / (std::to_string(threads) + "_threads.rsk")).string();
      const auto counts = with_threads(threads, [&] {
        RaceSketch s(family, 100003);
        build_dense(s, data, {.threads = threads});
        const NoiseReport noise = privatize(s, spec, {.seeded = true, .seed = 99});
        EXPECT_EQ(noise.blocks, (300009 + kNoiseBlockCounts - 1) / kNoiseBlockCounts);
        write_sketch_file(path, {{"rows", 3}, {"width", 100003}, {"privacy", privacy_record_json(s.privacy())}}, s.counts());
        return std::vector<std::int64_t>(s.counts().begin(), s.counts().end());
      });
      if (threads == 1) {
        reference_counts = counts;
        reference_bytes = slurp(path);
        continue;
      }
      EXPECT_TRUE(counts == reference_counts) << to_string(mechanism) << ", " << threads << " threads";
      EXPECT_TRUE(slurp(path) == reference_bytes) << to_string(mechanism) << ", " << threads << " threads";
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Scaling, BlockStreamsAreDistinctAndTheNoiseKeepsItsDistribution) {
  // An empty 4 x 131,072 sketch: eight blocks of pure discrete Laplace noise (table sampler).
  const std::size_t rows = 4, width = 131072;
  RaceSketch sketch(l2_family(rows, 2, 1.0), width);
  const PrivacySpec spec{.epsilon = 2.0};
  with_threads(3, [&] { return privatize(sketch, spec, {.seeded = true, .seed = 5}); });
  const DiscreteLaplace expected(static_cast<double>(rows) / spec.epsilon);  // scale 2
  EXPECT_EQ(privacy_record_json(sketch.privacy())["noise_sampler"], "exact_geometric_table");
  // Each block on its own follows the distribution, and no two blocks repeat a stream.
  std::set<std::vector<std::int64_t>> prefixes;
  const auto counts = sketch.counts();
  for (std::size_t b = 0; b * kNoiseBlockCounts < counts.size(); ++b) {
    const auto block = counts.subspan(b * kNoiseBlockCounts, kNoiseBlockCounts);
    std::map<long long, long long> hist;
    for (const auto c : block) ++hist[c];
    const auto [stat, df] = privrace::testing::chi_square(hist, [&](long long y) { return expected.pmf(y); }, -25, 25,
                                                          static_cast<long long>(block.size()));
    EXPECT_LT(stat, privrace::testing::chi_square_critical(df)) << "block " << b;
    prefixes.insert(std::vector<std::int64_t>(block.begin(), block.begin() + 64));
  }
  EXPECT_EQ(prefixes.size(), counts.size() / kNoiseBlockCounts);
}

TEST(Scaling, ReleaseNoiseFromTheCsprngOnSeveralThreadsKeepsItsDistribution) {
  const std::size_t rows = 4, width = 131072;
  const PrivacySpec spec{.epsilon = 2.0};
  const DiscreteLaplace expected(static_cast<double>(rows) / spec.epsilon);
  RaceSketch a(l2_family(rows, 2, 1.0), width), b(l2_family(rows, 2, 1.0), width);
  with_threads(2, [&] { return privatize(a, spec, {}); });
  with_threads(2, [&] { return privatize(b, spec, {}); });
  EXPECT_TRUE(privacy_record_json(a.privacy())["fit_for_release"].get<bool>());
  EXPECT_EQ(privacy_record_json(a.privacy())["noise_source"], CryptoRandom::name());
  std::map<long long, long long> hist;
  for (const auto c : a.counts()) ++hist[c];
  const auto [stat, df] = privrace::testing::chi_square(hist, [&](long long y) { return expected.pmf(y); }, -25, 25,
                                                        static_cast<long long>(a.counts().size()));
  EXPECT_LT(stat, privrace::testing::chi_square_critical(df));
  // Two releases never repeat: the CSPRNG is not derived from anything reproducible.
  std::size_t same = 0;
  for (std::size_t i = 0; i < a.counts().size(); ++i) same += a.counts()[i] == b.counts()[i];
  EXPECT_LT(same, a.counts().size() / 2);  // P(equal) per counter is about 0.25 at scale 2
}

TEST(Scaling, CsprngWordsAcrossRequestBoundariesAreUniform) {
  CryptoRandom rng;
  // 3 x 8192 + 17 words: crosses the 64 KiB request buffer twice.
  const std::size_t n = 3 * 8192 + 17;
  std::vector<std::uint64_t> words(n);
  rng.take(words.data(), n);
  long long ones = 0;
  for (const auto w : words) ones += __builtin_popcountll(w);
  const double bits = 64.0 * static_cast<double>(n);
  EXPECT_NEAR(static_cast<double>(ones) / bits, 0.5, 5.0 * 0.5 / std::sqrt(bits));
  EXPECT_EQ(std::set<std::uint64_t>(words.begin(), words.end()).size(), n);
}

TEST(Scaling, ParallelEncoderWritesTheSpecifiedBytesForAnyThreadCount) {
  const auto dir = privrace::testing::temp_dir("scaling_file");
  // 2.5 blocks: noise-like, all-zero and extreme blocks.
  const std::size_t n = (std::size_t{5} << 20) / 2;
  std::vector<std::int64_t> counts(n);
  SeededRandom rng(8);
  for (std::size_t i = 0; i < n; ++i) counts[i] = static_cast<std::int64_t>(rng.below(6001)) - 3000;
  for (std::size_t i = std::size_t{1} << 20; i < (std::size_t{2} << 20); ++i) counts[i] = 0;
  counts[n - 1] = std::numeric_limits<std::int64_t>::min();
  const nlohmann::json header = {{"rows", 5}, {"width", n / 5}};
  const std::string expected = reference_file(header, counts);
  for (const int threads : {1, 2, 3, 8}) {
    const std::string path = (dir / "f.rsk").string();
    SketchWriteTimings timings;
    with_threads(threads, [&] {
      write_sketch_file(path, header, counts, &timings);
      return 0;
    });
    EXPECT_TRUE(slurp(path) == expected) << threads << " threads";
    EXPECT_EQ(timings.bytes, expected.size());
    EXPECT_GT(timings.encode_seconds, 0.0);
    const SketchFileContents back = read_sketch_file(path);
    EXPECT_TRUE(back.counts == counts);
  }
  std::filesystem::remove_all(dir);
}

TEST(Scaling, GatheringWriteHandlesMorePiecesThanOneSystemCallTakes) {
  const auto dir = privrace::testing::temp_dir("scaling_pieces");
  // 3000 pieces (IOV_MAX is 1024), some empty.
  std::vector<std::string> storage;
  std::string joined;
  for (int i = 0; i < 3000; ++i) {
    storage.push_back(i % 7 == 0 ? std::string() : std::string(static_cast<std::size_t>(1 + i % 13), static_cast<char>('a' + i % 26)));
    joined += storage.back();
  }
  std::vector<std::string_view> pieces(storage.begin(), storage.end());
  const std::string path = (dir / "pieces.bin").string();
  write_file_atomically(path, pieces);
  EXPECT_EQ(slurp(path), joined);
  std::filesystem::remove_all(dir);
}

TEST(Scaling, DenseQueriesAreIdenticalForAnyThreadCount) {
  const auto family = l2_family(40, 3, 2.0);
  RaceSketch sketch(family, 257);
  build_dense(sketch, privrace::testing::clustered_points(5000, 3, 23), {.threads = 2});
  privatize(sketch, {.epsilon = 1.0}, {.seeded = true, .seed = 3});
  // 64 x 20 + 1 queries: twenty full batches and the single-query path.
  const DenseMatrix queries = privrace::testing::clustered_points(64 * 20 + 1, 3, 24);
  for (const bool mom : {false, true}) {
    QueryOptions opts{.estimator = mom ? Estimator::MedianOfMeans : Estimator::Mean, .debias = true, .threads = 1};
    const std::vector<double> reference = sketch.query_dense(queries, opts);
    for (const int threads : {2, 3, 8}) {
      opts.threads = threads;
      EXPECT_TRUE(sketch.query_dense(queries, opts) == reference) << threads << " threads, mom " << mom;
    }
  }
}

namespace {
struct CliResult {
  int code;
  std::string out, err;
};
CliResult run_cli(const std::string& args, const std::filesystem::path& dir) {
  const auto err_file = dir / "stderr.txt";
  FILE* pipe = popen((std::string(PRIVRACE_CLI) + " " + args + " 2>" + err_file.string()).c_str(), "r");
  std::string out;
  char buf[4096];
  while (const std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, slurp(err_file.string())};
}
}  // namespace

TEST(ScalingCli, TimingsThreadInvarianceAndBadThreadCounts) {
  const auto dir = privrace::testing::temp_dir("scaling_cli");
  const DenseMatrix data = privrace::testing::clustered_points(5000, 3, 25);
  {
    std::ofstream csv(dir / "data.csv");
    for (Eigen::Index i = 0; i < data.rows(); ++i) csv << data(i, 0) << "," << data(i, 1) << "," << data(i, 2) << "\n";
    std::ofstream q(dir / "q.csv");
    for (Eigen::Index i = 0; i < 300; ++i) q << data(i, 0) << "," << data(i, 1) << "," << data(i, 2) << "\n";
  }
  const std::string input = (dir / "data.csv").string(), queries = (dir / "q.csv").string();
  auto sketch = [&](int threads, const std::string& out) {
    return run_cli("sketch --input " + input + " --rows 30 --width 3000 --bandwidth 2 --epsilon 1 --seed 4 --timings -q --threads " +
                       std::to_string(threads) + " -o " + (dir / out).string(),
                   dir);
  };
  std::string counts_1, answers_1;
  for (const int threads : {1, 2, 3}) {
    const std::string out = std::to_string(threads) + "_threads.rsk";
    const CliResult r = sketch(threads, out);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto pos = r.err.find("privrace: timings ");
    ASSERT_NE(pos, std::string::npos) << r.err;
    const auto t = nlohmann::json::parse(r.err.substr(pos + 18, r.err.find('\n', pos) - pos - 18));
    for (const char* key : {"read", "allocate", "fill", "merge", "noise", "noise_draw", "encode", "write", "fsync", "total"})
      EXPECT_TRUE(t.contains(key) && t.at(key).get<double>() >= 0.0) << key;
    EXPECT_EQ(t.at("threads").get<int>(), threads);
    EXPECT_EQ(t.at("points").get<int>(), 5000);
    // Seeded: the encoded counts (noise included) are the same whatever the thread count. The
    // header differs in build.threads, so the payload is compared: it follows "PRIVRACE",
    // the u32 version, the u64 header length, the header and the u64 payload length, and
    // precedes the u32 checksum.
    const std::string bytes = slurp((dir / out).string());
    ASSERT_GT(bytes.size(), 32u);
    std::uint64_t header_len = 0;
    for (int i = 0; i < 8; ++i) header_len |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[12 + i])) << (8 * i);
    ASSERT_LT(28 + header_len, bytes.size());
    const std::string table = bytes.substr(28 + header_len, bytes.size() - 4 - 28 - header_len);
    const CliResult answers = run_cli("query " + (dir / out).string() + " --queries " + queries + " --threads " + std::to_string(threads), dir);
    ASSERT_EQ(answers.code, 0) << answers.err;
    if (threads == 1) {
      counts_1 = table;
      answers_1 = answers.out;
    } else {
      EXPECT_TRUE(table == counts_1) << threads << " threads";
      EXPECT_EQ(answers.out, answers_1) << threads << " threads";
    }
  }
  EXPECT_EQ(std::count(answers_1.begin(), answers_1.end(), '\n'), 300);
  const CliResult bad = sketch(-1, "bad.rsk");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--threads must be 0 (all) or positive, got -1"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.rsk"));
  const CliResult bad_query = run_cli("query " + (dir / "1_threads.rsk").string() + " --queries " + queries + " --threads -2", dir);
  EXPECT_EQ(bad_query.code, 2);
  EXPECT_NE(bad_query.err.find("--threads must be 0 (all) or positive, got -2"), std::string::npos) << bad_query.err;
  EXPECT_TRUE(bad_query.out.empty());
  std::filesystem::remove_all(dir);
}
