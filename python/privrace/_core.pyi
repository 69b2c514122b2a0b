# Type stubs of the compiled module privrace._core (python/src/module.cpp). Keep in step with the
# bindings: every public class, method, keyword and default there is written here.
from typing import Any, Literal, Optional, Sequence, Tuple, TypeVar, Union

import numpy as np
import numpy.typing as npt

__version__: str
git_commit: str

class NotFitForReleaseWarning(UserWarning): ...
class UnsupportedTaskWarning(UserWarning): ...

_Array = npt.ArrayLike
_S = TypeVar("_S", bound="RaceSketch")
_Mechanism = Literal["discrete_laplace", "floored_laplace", "gaussian"]
_Neighbors = Literal["add-remove", "replace"]
_Estimator = str  # "mean", "mom", ... (privrace query --estimator)

class RaceSketch:
    def __init__(
        self,
        kernel: str = "l2",
        *,
        rows: int,
        width: int,
        bandwidth: float = 1.0,
        power: int = 1,
        seed: Optional[int] = None,
        pair_mode: str = "query",
        hash_seed: Optional[int] = None,
    ) -> None: ...
    @staticmethod
    def like(other: Union[RaceSketch, str]) -> RaceSketch: ...  # a FeatureSketch for rff/hist parameters
    def fit(
        self: _S,
        X: _Array,
        *,
        epsilon: Optional[float],
        mechanism: Union[_Mechanism, str] = "discrete_laplace",
        delta: float = 0.0,
        neighbors: Union[_Neighbors, str] = "add-remove",
        threads: int = 0,
        allow_non_private: bool = False,
        strategy: str = "auto",
        columns: Optional[Sequence[Union[str, int]]] = None,
    ) -> _S: ...
    def fit_sets(
        self: _S,
        sets: Sequence[_Array],
        *,
        epsilon: Optional[float],
        mechanism: Union[_Mechanism, str] = "discrete_laplace",
        delta: float = 0.0,
        neighbors: Union[_Neighbors, str] = "add-remove",
        threads: int = 0,
        allow_non_private: bool = False,
        strategy: str = "auto",
    ) -> _S: ...
    def kernel_sums(
        self, Q: _Array, *, estimator: Union[_Estimator, str] = "mean", mom_groups: int = 5, debias: bool = False
    ) -> npt.NDArray[np.float64]: ...
    def query(
        self, Q: _Array, *, estimator: Union[_Estimator, str] = "mean", mom_groups: int = 5, debias: bool = False
    ) -> npt.NDArray[np.float64]: ...
    def save(self, path: str, *, allow_non_private: bool = False) -> None: ...
    @staticmethod
    def load(path: str) -> RaceSketch: ...
    def to_bytes(self, *, allow_non_private: bool = False) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> RaceSketch: ...
    def get_params(self, deep: bool = True) -> dict[str, Any]: ...
    def set_params(self: _S, **params: Any) -> _S: ...
    def __getstate__(self) -> Any: ...
    def __setstate__(self, state: Any) -> None: ...
    def merge(self: _S, other: RaceSketch) -> _S: ...
    @property
    def header(self) -> dict[str, Any]: ...
    @property
    def counts(self) -> npt.NDArray[np.int64]: ...
    @property
    def n_hat(self) -> float: ...
    @property
    def rows(self) -> int: ...
    @property
    def width(self) -> int: ...
    @property
    def is_private(self) -> bool: ...
    @property
    def fitted(self) -> bool: ...
    @property
    def fit_report(self) -> dict[str, Any]: ...
    # privrace.dask's partial counts (not public API)
    def _exact_partial(self, X: _Array, *, master: int, fixed: bool, dim: int, first_row: int,
                       partition_starts: Sequence[int], first_partition: int = 0, epsilon: Optional[float],
                       mechanism: str = "discrete_laplace", delta: float = 0.0, neighbors: str = "add-remove",
                       threads: int = 0, allow_non_private: bool = False, strategy: str = "auto") -> ExactPartial: ...
    def _exact_partial_sets(self, sets: Sequence[_Array], *, master: int, fixed: bool, partition: int,
                            epsilon: Optional[float], mechanism: str = "discrete_laplace", delta: float = 0.0,
                            neighbors: str = "add-remove", threads: int = 0, allow_non_private: bool = False,
                            strategy: str = "auto") -> ExactPartial: ...

class FeatureSketch(RaceSketch):
    def __init__(  # type: ignore[override]
        self,
        kernel: Literal["rff", "hist"],
        *,
        features: Optional[int] = None,
        sigma: Optional[float] = None,
        bins: Optional[int] = None,
        domain: Union[None, str, Tuple[float, float], Sequence[Tuple[float, float]]] = None,
        seed: Optional[int] = None,
        hash_seed: Optional[int] = None,
        num_share: float = 0.98,
    ) -> None: ...
    @staticmethod
    def load(path: str) -> FeatureSketch: ...
    @staticmethod
    def from_bytes(data: bytes) -> FeatureSketch: ...

class ExactPartial:
    def __getstate__(self) -> Any: ...
    def __setstate__(self, state: Any) -> None: ...

def _resolve_master(seed: Optional[int]) -> Tuple[int, bool]: ...
def _combine(parts: Sequence[ExactPartial]) -> ExactPartial: ...
def _release(exact: ExactPartial) -> RaceSketch: ...

_Domain = Union[Tuple[float, float], Tuple[Sequence[float], Sequence[float]]]
_Predicate = Tuple[int, Literal["<=", ">="], float]

class M2M:
    def __init__(
        self,
        path: Union[str, RaceSketch],
        *,
        domain: Optional[_Domain] = None,
        samples: int = 100000,
        seed: int = 0x4D324D,
        threads: int = 0,
        intercept: bool = False,
        lambda_rule: Literal["eq5", "auto-noise"] = "eq5",
        allow_unsupported: bool = False,
    ) -> None: ...
    def mean(self) -> npt.NDArray[np.float64]: ...
    def moment2(self) -> npt.NDArray[np.float64]: ...
    def cdf(self, points: int = 10) -> npt.NDArray[np.float64]: ...
    def cov(self) -> npt.NDArray[np.float64]: ...
    def count(self, queries: Sequence[Sequence[_Predicate]]) -> npt.NDArray[np.float64]: ...
    @property
    def released_count(self) -> float: ...
    @property
    def weights(self) -> npt.NDArray[np.float64]: ...
    @property
    def lambda_(self) -> float: ...
    @property
    def synthetic(self) -> npt.NDArray[np.float64]: ...
    @property
    def header(self) -> dict[str, Any]: ...
    @property
    def fit_info(self) -> dict[str, Any]: ...
