#pragma once
// DP-WGAN: a Wasserstein GAN whose critic is trained with DP-SGD (Xie, Lin, Wang, Wang & Zhou,
// "Differentially Private Generative Adversarial Network", 2018; per-example clipping as in
// Alzantot & Srivastava's DP-WGAN and Abadi et al. 2016), on the table normalised to [0, 1]^d
// through its declared box. The network code is libtorch (the PyTorch C++ frontend); torch
// stays inside dp_wgan.cpp.
//
// Privacy ((epsilon, delta)-DP, neighbours add or remove one record):
//  * Only the critic reads real records. Each critic step draws a Poisson batch (every record
//    independently with probability q = batch / n), computes every record's gradient of the
//    critic loss term -D(x), clips each to L2 norm C, sums, adds N(0, sigma^2 C^2) to every
//    coordinate and divides by the expected batch size: one subsampled Gaussian mechanism of
//    noise multiplier sigma (sensitivity C of the clipped sum). The loss term on generated
//    rows and the generator's updates read no data: post-processing.
//  * T = generator_steps x critic_steps such steps compose; the RDP accountant
//    (privacy/rdp_accountant.hpp, Mironov, Talwar & Zhang 2019) gives (epsilon, delta) and
//    sigma is the smallest multiplier in the search range that meets the target epsilon.
//  * Per-example gradients are exact and batched: for a dense layer, record i's weight
//    gradient is the outer product delta_i a_i^T of its back-propagated error and its input,
//    so its squared norm is |delta_i|^2 |a_i|^2 (plus |delta_i|^2 for the bias), and the
//    clipped sum is (c * delta)^T A with c_i = min(1, C / norm_i). (A test checks this against
//    one autograd pass per record.)
//  * The Gaussian noise is floating-point N(0, 1) from torch's generator, seeded from the
//    noise source (as DP-SGD libraries do without a secure mode); DP-WGAN is therefore the one
//    generator without an exact sampler, and its seeded runs are for experiments.
#include <cstdint>
#include <memory>
#include <vector>

#include "privrace/baselines/synthetic.hpp"
#include "privrace/privacy/rdp_accountant.hpp"

namespace privrace::baselines {

struct DpWganOptions {
  int latent = 16;                   // generator input: N(0, I) of this dimension
  int hidden = 64;                   // units in each of the 2 hidden layers (generator and critic)
  std::size_t batch = 256;           // expected Poisson batch size L; q = L / n
  std::size_t generator_steps = 1000;
  int critic_steps = 5;              // DP-SGD critic updates per generator update
  double clip = 1.0;                 // C, per-example L2 clipping norm
  double learning_rate = 5e-4;       // Adam, both networks (betas 0.5, 0.9)
  double weight_clip = 0.1;          // critic weights clipped to [-w, w] (WGAN's Lipschitz constraint)
  NoiseMultiplierSearch search;      // sigma range for the target epsilon
  int threads = 0;                   // torch intra-op threads; 0 = OpenMP's default
};

class DpWgan final : public SyntheticGenerator {
 public:
  explicit DpWgan(const DpWganOptions& options = {});
  ~DpWgan() override;
  std::string name() const override { return "dp_wgan"; }
  // UsageError: delta outside (0, 1), epsilon too small for any sigma in the search range,
  // fewer rows than the batch, a bad option.
  void fit(const DenseRef& table, const TableBox& box, const SyntheticPrivacy& privacy, RandomSource& noise) override;
  DoubleMatrix sample(std::size_t rows, std::uint64_t seed) const override;
  nlohmann::json privacy_record() const override;

  double noise_multiplier() const { return sigma_; }
  double training_seconds() const { return train_seconds_; }

 private:
  struct Nets;
  DpWganOptions opt_;
  std::unique_ptr<Nets> nets_;
  TableBox box_;
  double epsilon_ = 0, delta_ = 0, sigma_ = 0, q_ = 0, accounted_eps_ = 0, order_ = 0, train_seconds_ = 0;
  std::size_t n_ = 0, steps_ = 0;
};

// For tests: the per-example critic gradients of -D(x) for the rows of `unit_batch` (in
// [0, 1]^d) at a freshly initialised critic (seeded), each computed by its own autograd pass.
// Returns their L2 norms before and after clipping to `clip`, and the largest absolute
// difference between the sum of those clipped gradients and the batched clipped sum that
// training uses.
struct ClippingCheck {
  std::vector<double> norms_before, norms_after;
  double batched_sum_error = 0;
};
ClippingCheck dp_wgan_clipping_check(const DoubleMatrix& unit_batch, const DpWganOptions& options, double clip,
                                     std::uint64_t seed);

}  // namespace privrace::baselines
