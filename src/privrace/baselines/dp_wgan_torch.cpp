// DP-WGAN on libtorch: the module libprivrace_dp_wgan.so, the only code that includes or links
// torch, loaded by DpWgan (dp_wgan.cpp) on first use. It exports two C functions; everything
// else stays inside. See dp_wgan.hpp for the privacy argument.
#include "privrace/baselines/dp_wgan.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <dlfcn.h>
#include <omp.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>

#include "privrace/core/error.hpp"

namespace privrace::baselines {
namespace {

// The critic: d -> hidden -> hidden -> 1, LeakyReLU(0.2), written out layer by layer so the
// per-example gradients can be formed from each layer's input and back-propagated error.
struct Critic {
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
  Critic(int d, int h) : l1(d, h), l2(h, h), l3(h, 1) {}
  std::vector<torch::Tensor> parameters() const { return {l1->weight, l1->bias, l2->weight, l2->bias, l3->weight, l3->bias}; }
  struct Trace {
    torch::Tensor a0, z1, a1, z2, a2, out;
  };
  Trace trace(const torch::Tensor& x) const {
    Trace t;
    t.a0 = x;
    t.z1 = torch::linear(x, l1->weight, l1->bias);
    t.a1 = torch::leaky_relu(t.z1, 0.2);
    t.z2 = torch::linear(t.a1, l2->weight, l2->bias);
    t.a2 = torch::leaky_relu(t.z2, 0.2);
    t.out = torch::linear(t.a2, l3->weight, l3->bias);
    return t;
  }
  torch::Tensor forward(const torch::Tensor& x) const { return trace(x).out; }
};

torch::nn::Sequential make_generator(int latent, int hidden, int d) {
  return torch::nn::Sequential(torch::nn::Linear(latent, hidden), torch::nn::ReLU(), torch::nn::Linear(hidden, hidden),
                               torch::nn::ReLU(), torch::nn::Linear(hidden, d), torch::nn::Sigmoid());
}

// PyTorch's default Linear initialisation (uniform in +-1/sqrt(fan_in)), from our generator
// instead of the global one.
void init_uniform(const std::vector<torch::Tensor>& params, at::Generator& gen) {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i + 1 < params.size(); i += 2) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(params[i].size(1)));
    params[i].uniform_(-bound, bound, gen);
    params[i + 1].uniform_(-bound, bound, gen);
  }
}

struct ClippedGradient {
  std::vector<torch::Tensor> sum;  // per parameter: sum over the batch of clipped gradients
  torch::Tensor norms;             // per record, before clipping
};

// Per-example gradients of sum_i sign D(x_i), clipped to L2 norm `clip` and summed (exact;
// see dp_wgan.hpp): the layer errors back-propagated once for the batch, then two products per
// layer. The clipping check below compares it with autograd's per-example gradients.
ClippedGradient clipped_gradient(const Critic& critic, const torch::Tensor& x, double clip, double sign) {
  const Critic::Trace t = critic.trace(x);
  // The layer errors of sign * sum_i D(x_i), back-propagated by hand with the operations
  // autograd's backward uses (the same kernels, the same values), without recording a graph.
  torch::Tensor deltas[3];
  deltas[2] = torch::full({x.size(0), 1}, sign, x.options());
  deltas[1] = torch::leaky_relu_backward(deltas[2].mm(critic.l3->weight), t.z2, 0.2, false);
  deltas[0] = torch::leaky_relu_backward(deltas[1].mm(critic.l2->weight), t.z1, 0.2, false);
  const torch::Tensor inputs[3] = {t.a0, t.a1, t.a2};
  torch::Tensor norm2 = torch::zeros({x.size(0)}, x.options());
  for (int l = 0; l < 3; ++l) norm2 += deltas[l].pow(2).sum(1) * (inputs[l].pow(2).sum(1) + 1.0);
  ClippedGradient g;
  g.norms = norm2.sqrt();
  const torch::Tensor factor = (clip / (g.norms + 1e-12)).clamp_max(1.0).unsqueeze(1);
  for (int l = 0; l < 3; ++l) {
    const torch::Tensor cd = deltas[l] * factor;
    g.sum.push_back(cd.t().mm(inputs[l]));  // weight: sum_i c_i delta_i a_i^T
    g.sum.push_back(cd.sum(0));             // bias: sum_i c_i delta_i
  }
  return g;
}

torch::Tensor to_tensor(const DoubleMatrix& m) {
  torch::Tensor t = torch::empty({m.rows(), m.cols()}, torch::kFloat32);
  auto a = t.accessor<float, 2>();
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) a[i][j] = static_cast<float>(m(i, j));
  return t;
}

// libtorch's matrix products go to the system's BLAS, libblas.so.3 (Debian: OpenBLAS when
// installed, which scripts/setup.sh does with libtorch: a fit 3x faster than on the reference
// BLAS, docs/experiments.md "Jobs"). Set once, before the first fit: OpenBLAS on one thread, as
// the fit's torch thread (two jobs then do not share two cores four ways). Returns the library's
// file, which every record names: results and speed depend on it.
const std::string& blas_library() {
  static const std::string path = [] {
    void* h = dlopen("libblas.so.3", RTLD_NOW | RTLD_NOLOAD);  // the copy libtorch loaded
    if (!h) return std::string("unknown");
    if (auto* set_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"))) set_threads(1);
    Dl_info info{};
    void* gemm = dlsym(h, "sgemm_");
    std::string file = gemm && dladdr(gemm, &info) && info.dli_fname ? info.dli_fname : "unknown";
    std::error_code ec;  // the alternatives' link resolved: which BLAS, not the name it was asked by
    if (const auto real = std::filesystem::canonical(file, ec); !ec) file = real.string();
    dlclose(h);  // drops the reference taken above; libtorch keeps it loaded
    return file;
  }();
  return path;
}

// torch::set_num_threads also sets OpenMP's thread count for the whole process: restore it.
class TorchThreads {
 public:
  explicit TorchThreads(int threads) : saved_(omp_get_max_threads()) { torch::set_num_threads(threads > 0 ? threads : saved_); }
  ~TorchThreads() {
    torch::set_num_threads(saved_);
    omp_set_num_threads(saved_);
  }
  TorchThreads(const TorchThreads&) = delete;
  TorchThreads& operator=(const TorchThreads&) = delete;

 private:
  int saved_;
};

class TorchDpWgan final : public DpWganModel {
 public:
  explicit TorchDpWgan(const DpWganOptions& options);
  std::string name() const override { return "dp_wgan"; }
  void fit(const DenseRef& table, const TableBox& box, const SyntheticPrivacy& privacy, RandomSource& noise) override;
  DoubleMatrix sample(std::size_t rows, std::uint64_t seed) const override;
  nlohmann::json privacy_record() const override;
  double noise_multiplier() const override { return sigma_; }
  double training_seconds() const override { return train_seconds_; }

 private:
  struct Nets {
    torch::nn::Sequential generator{nullptr};
  };
  DpWganOptions opt_;
  std::unique_ptr<Nets> nets_;
  TableBox box_;
  double epsilon_ = 0, delta_ = 0, sigma_ = 0, q_ = 0, accounted_eps_ = 0, order_ = 0, train_seconds_ = 0;
  std::size_t n_ = 0, steps_ = 0;
};

TorchDpWgan::TorchDpWgan(const DpWganOptions& options) : opt_(options) {
  blas_library();  // one BLAS thread before any fit
  if (opt_.latent < 1 || opt_.hidden < 1) throw UsageError("dp_wgan: latent and hidden must be at least 1");
  if (opt_.batch < 1) throw UsageError("dp_wgan: batch must be at least 1");
  if (opt_.generator_steps < 1 || opt_.critic_steps < 1) throw UsageError("dp_wgan: generator_steps and critic_steps must be at least 1");
  if (!(opt_.clip > 0) || !(opt_.learning_rate > 0) || !(opt_.weight_clip > 0))
    throw UsageError("dp_wgan: clip, learning_rate and weight_clip must be positive");
}

void TorchDpWgan::fit(const DenseRef& table, const TableBox& box, const SyntheticPrivacy& privacy, RandomSource& noise) {
  check_synthetic_privacy(privacy, true, name());
  const auto n = static_cast<std::size_t>(table.rows());
  const auto d = static_cast<int>(table.cols());
  box.check(static_cast<std::size_t>(d));
  if (n <= opt_.batch)
    throw UsageError("dp_wgan: the table has " + std::to_string(n) + " rows; expected more than the batch size " +
                     std::to_string(opt_.batch));
  nets_.reset();
  box_ = box;
  n_ = n;
  epsilon_ = privacy.epsilon;
  delta_ = privacy.delta;
  q_ = static_cast<double>(opt_.batch) / static_cast<double>(n);
  steps_ = opt_.generator_steps * static_cast<std::size_t>(opt_.critic_steps);
  // Throws, naming the values, when no sigma in the range reaches the target epsilon.
  sigma_ = find_noise_multiplier(epsilon_, q_, steps_, delta_, opt_.search);
  const RdpEpsilon spent = dp_sgd_epsilon(q_, sigma_, steps_, delta_);
  accounted_eps_ = spent.epsilon;
  order_ = spent.order;

  const auto t0 = std::chrono::steady_clock::now();
  TorchThreads threads(opt_.threads);
  torch::NoGradGuard outer_no_grad;  // re-enabled where gradients are needed
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(noise.next());
  DoubleMatrix unit(static_cast<Eigen::Index>(n), d);
  for (std::size_t i = 0; i < n; ++i)
    for (int j = 0; j < d; ++j)
      unit(static_cast<Eigen::Index>(i), j) = box.to_unit(static_cast<std::size_t>(j), table(static_cast<Eigen::Index>(i), j));
  const torch::Tensor data = to_tensor(unit);

  auto nets = std::make_unique<Nets>();
  nets->generator = make_generator(opt_.latent, opt_.hidden, d);
  Critic critic(d, opt_.hidden);
  init_uniform(critic.parameters(), gen);
  {
    std::vector<torch::Tensor> gp;
    for (const auto& p : nets->generator->parameters()) gp.push_back(p);
    init_uniform(gp, gen);
  }
  torch::optim::Adam critic_opt(critic.parameters(), torch::optim::AdamOptions(opt_.learning_rate).betas({0.5, 0.9}));
  torch::optim::Adam gen_opt(nets->generator->parameters(), torch::optim::AdamOptions(opt_.learning_rate).betas({0.5, 0.9}));
  const auto batch = static_cast<std::int64_t>(opt_.batch);
  const double expected_batch = static_cast<double>(opt_.batch);
  const auto critic_params = critic.parameters();
  std::vector<std::int64_t> chosen;
  chosen.reserve(2 * opt_.batch);
  for (std::size_t g = 0; g < opt_.generator_steps; ++g) {
    for (int c = 0; c < opt_.critic_steps; ++c) {
      // Poisson subsampling: every record independently with probability q.
      chosen.clear();
      for (std::size_t i = 0; i < n; ++i)
        if (noise.unit() < q_) chosen.push_back(static_cast<std::int64_t>(i));
      std::vector<torch::Tensor> grads;
      {
        if (!chosen.empty()) {
          const torch::Tensor idx = torch::from_blob(chosen.data(), {static_cast<std::int64_t>(chosen.size())}, torch::kInt64);
          grads = clipped_gradient(critic, data.index_select(0, idx), opt_.clip, -1.0).sum;
        } else {
          for (const auto& p : critic_params) grads.push_back(torch::zeros_like(p));
        }
        // The generated half of the loss, mean D(G(z)): reads no data, needs no noise. Its
        // per-example gradients are clipped to C as well, so that the two halves keep their
        // balance (clipping only the real half would let the generated half dominate).
        const torch::Tensor fake = nets->generator->forward(torch::randn({batch, opt_.latent}, gen)).detach();
        const auto fake_grads = clipped_gradient(critic, fake, opt_.clip, 1.0).sum;
        for (std::size_t p = 0; p < grads.size(); ++p)
          grads[p] = (grads[p] + torch::randn(grads[p].sizes(), gen) * (sigma_ * opt_.clip) + fake_grads[p]) / expected_batch;
      }
      critic_opt.zero_grad();
      for (std::size_t p = 0; p < grads.size(); ++p) critic_params[p].mutable_grad() = grads[p];
      critic_opt.step();
      for (const auto& p : critic_params) p.clamp_(-opt_.weight_clip, opt_.weight_clip);
    }
    torch::AutoGradMode grad_on(true);
    gen_opt.zero_grad();
    const torch::Tensor loss = -critic.forward(nets->generator->forward(torch::randn({batch, opt_.latent}, gen))).mean();
    loss.backward();
    gen_opt.step();
  }
  nets_ = std::move(nets);
  train_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

DoubleMatrix TorchDpWgan::sample(std::size_t rows, std::uint64_t seed) const {
  check_synthetic_rows(rows, name());
  if (!nets_) throw UsageError("dp_wgan: sample() before fit()");
  TorchThreads threads(opt_.threads);  // as the fit: libtorch's sums depend on its thread count
  torch::NoGradGuard no_grad;
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const torch::Tensor out =
      nets_->generator->forward(torch::randn({static_cast<std::int64_t>(rows), opt_.latent}, gen)).to(torch::kFloat64).contiguous();
  const auto d = static_cast<Eigen::Index>(out.size(1));
  DoubleMatrix x(static_cast<Eigen::Index>(rows), d);
  const double* p = out.data_ptr<double>();
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    for (Eigen::Index j = 0; j < d; ++j) x(i, j) = box_.from_unit(static_cast<std::size_t>(j), std::clamp(p[i * d + j], 0.0, 1.0));
  return x;
}

nlohmann::json TorchDpWgan::privacy_record() const {
  if (!nets_) throw UsageError("dp_wgan: privacy_record() before fit()");
  return {{"generator", name()},
          {"epsilon", epsilon_},
          {"delta", delta_},
          {"neighbors", "add or remove one record"},
          {"budget_split", {{"critic_dp_sgd", epsilon_}, {"generator", 0.0}}},
          {"accountant", "RDP of the Poisson-subsampled Gaussian mechanism (Mironov, Talwar & Zhang 2019)"},
          {"accounted_epsilon", accounted_eps_},
          {"rdp_order", order_},
          {"noise_multiplier", sigma_},
          {"sampling_rate", q_},
          {"dp_sgd_steps", steps_},
          {"clip_norm", opt_.clip},
          {"expected_batch", opt_.batch},
          {"generator_steps", opt_.generator_steps},
          {"critic_steps", opt_.critic_steps},
          {"noise", "floating-point Gaussian from torch's generator (seeded from the noise source)"},
          {"training_seconds", train_seconds_},
          {"blas", blas_library()},
          {"box", box_.to_json()}};
}

ClippingCheck clipping_check(const DoubleMatrix& unit_batch, const DpWganOptions& options, double clip, std::uint64_t seed) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  Critic critic(static_cast<int>(unit_batch.cols()), options.hidden);
  const auto params = critic.parameters();
  init_uniform(params, gen);
  const torch::Tensor x = to_tensor(unit_batch);
  ClippingCheck check;
  std::vector<torch::Tensor> sum;
  for (const auto& p : params) sum.push_back(torch::zeros_like(p));
  for (std::int64_t i = 0; i < x.size(0); ++i) {
    const auto g = torch::autograd::grad({-critic.forward(x.narrow(0, i, 1)).sum()}, params);
    double norm2 = 0;
    for (const auto& t : g) norm2 += t.pow(2).sum().item<double>();
    const double norm = std::sqrt(norm2), factor = std::min(1.0, clip / norm);
    double after2 = 0;
    for (std::size_t p = 0; p < g.size(); ++p) {
      const torch::Tensor clipped = g[p] * factor;
      after2 += clipped.pow(2).sum().item<double>();
      sum[p] += clipped;
    }
    check.norms_before.push_back(norm);
    check.norms_after.push_back(std::sqrt(after2));
  }
  const ClippedGradient batched = clipped_gradient(critic, x, clip, -1.0);
  for (std::size_t p = 0; p < sum.size(); ++p)
    check.batched_sum_error = std::max(check.batched_sum_error, (batched.sum[p] - sum[p]).abs().max().item<double>());
  return check;
}

}  // namespace
}  // namespace privrace::baselines

// The module's interface (dp_wgan.cpp looks these up by name).
extern "C" __attribute__((visibility("default"))) privrace::baselines::DpWganModel* privrace_dp_wgan_new(
    const privrace::baselines::DpWganOptions* options) {
  return new privrace::baselines::TorchDpWgan(*options);
}
extern "C" __attribute__((visibility("default"))) void privrace_dp_wgan_clipping_check(
    const privrace::DoubleMatrix* unit_batch, const privrace::baselines::DpWganOptions* options, double clip,
    std::uint64_t seed, privrace::baselines::ClippingCheck* out) {
  *out = privrace::baselines::clipping_check(*unit_batch, *options, clip, seed);
}
