#pragma once
// DP-WGAN: a Wasserstein GAN whose critic is trained with DP-SGD (Xie, Lin, Wang, Wang & Zhou,
// "Differentially Private Generative Adversarial Network", 2018; per-example clipping as in
// Alzantot & Srivastava's DP-WGAN and Abadi et al. 2016), on the table normalised to [0, 1]^d
// through its declared box. The network code is libtorch (the PyTorch C++ frontend), built as
// a module of its own (libprivrace_dp_wgan.so, from dp_wgan_torch.cpp) that DpWgan loads on
// first use: nothing else links or loads torch (its 290 libraries cost 0.5 s at start-up).
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

// What the module implements.
class DpWganModel : public SyntheticGenerator {
 public:
  virtual double noise_multiplier() const = 0;
  virtual double training_seconds() const = 0;
};

// DP-WGAN through the module. The module is looked for at $PRIVRACE_DP_WGAN_MODULE, next to the
// running executable, in ../lib/privrace from it (an install), in the build tree, then in the
// configured install prefix; UnavailableError (core/error.hpp) naming the places tried when none loads.
class DpWgan final : public SyntheticGenerator {
 public:
  explicit DpWgan(const DpWganOptions& options = {});
  ~DpWgan() override;
  std::string name() const override { return "dp_wgan"; }
  // UsageError: delta outside (0, 1), epsilon too small for any sigma in the search range,
  // fewer rows than the batch, a bad option.
  void fit(const DenseRef& table, const TableBox& box, const SyntheticPrivacy& privacy, RandomSource& noise) override {
    model_->fit(table, box, privacy, noise);
  }
  DoubleMatrix sample(std::size_t rows, std::uint64_t seed) const override { return model_->sample(rows, seed); }
  nlohmann::json privacy_record() const override { return model_->privacy_record(); }
  double noise_multiplier() const { return model_->noise_multiplier(); }
  double training_seconds() const { return model_->training_seconds(); }

 private:
  std::unique_ptr<DpWganModel> model_;
};

// The module's file, once loaded ("" before).
std::string dp_wgan_module_path();

struct ClippingCheck {
  std::vector<double> norms_before, norms_after;
  double batched_sum_error = 0;
};
ClippingCheck dp_wgan_clipping_check(const DoubleMatrix& unit_batch, const DpWganOptions& options, double clip,
                                     std::uint64_t seed);

}  // namespace privrace::baselines
