"""The selection planner against numpy itself: plan a read, emulate the native orthogonal
read on an in-memory array (checking the contract on every axis), post-process, and
compare with h5py's indexing semantics computed from numpy (`h5py_reference`): numpy's
rules, except that integers only drop their axis (the one index array keeps its place)
and a selection that leaves no axes of a non-scalar dataset gives a numpy scalar."""

import numpy as np
import pytest

from h5turbo.objects.selection import plan_read, split_fields

SHAPES = [(), (0,), (7,), (1,), (4, 5), (3, 0), (2, 3, 4), (0, 2, 3), (2, 3, 2, 3)]


def emulate_native_read(arr, axes):
    """What the native reader fills, validating each AxisSelection per the contract."""
    assert len(axes) == arr.ndim
    positions = []
    for axis, n in zip(axes, arr.shape):
        if isinstance(axis, tuple):
            start, count, step = axis
            assert all(isinstance(v, int) for v in axis)
            assert step >= 1 and start >= 0 and count >= 0
            assert count == 0 or start + (count - 1) * step < n
            positions.append(np.arange(start, start + count * step, step)[:count])
        else:
            assert axis.dtype == np.uint64 and axis.ndim == 1 and axis.flags.c_contiguous
            assert (np.diff(axis.astype(np.int64)) > 0).all() and (axis < n).all()
            positions.append(axis.astype(np.intp))
    if not positions:
        return arr.copy()
    return np.ascontiguousarray(arr[np.ix_(*positions)])


def planned(arr, index):
    plan = plan_read(index, arr.shape)
    block = emulate_native_read(arr, plan.axes)
    assert block.shape == plan.read_shape
    return plan, plan.finish(block)


def _is_int(entry):
    return isinstance(entry, (int, np.integer)) and not isinstance(entry, (bool, np.bool_))


def _entry_dims(entry, ndim, consumed):
    """(dataset axes consumed, result dims produced) by one index entry."""
    if entry is None:
        return 0, 1
    if entry is Ellipsis:
        return None, None
    if isinstance(entry, slice) or _is_int(entry):
        return 1, 1
    arr = np.asarray(entry)
    if arr.dtype == np.bool_:
        return arr.ndim, 1
    return 1, arr.ndim


def h5py_reference(arr, index):
    """What h5py returns for arr[index], derived from numpy indexing."""
    entries = list(index) if isinstance(index, tuple) else [index]
    as_slices = tuple(slice(e, e + 1 or None) if _is_int(e) else e for e in entries)
    result = arr[as_slices if isinstance(index, tuple) else as_slices[0]]
    consumed = sum(_entry_dims(e, arr.ndim, 0)[0] or 0 for e in entries)
    squeeze, dim, axis = [], 0, 0
    for e in entries:
        used, made = _entry_dims(e, arr.ndim, consumed)
        if e is Ellipsis:
            used = made = arr.ndim - consumed
        if _is_int(e):
            # numpy skips this check when another axis leaves the result empty; h5py does not
            if not -arr.shape[axis] <= e < arr.shape[axis]:
                raise IndexError(f"index {e} is out of bounds for axis {axis} with size {arr.shape[axis]}")
            squeeze.append(dim)
        dim += made
        axis += used
    result = np.squeeze(result, axis=tuple(squeeze)) if squeeze else result
    if arr.ndim > 0 and isinstance(result, np.ndarray) and result.ndim == 0:
        return result[()]
    return result


def assert_same_as_numpy(arr, index):
    expected = h5py_reference(arr, index)
    plan, got = planned(arr, index)
    assert type(got) is type(expected), (index, type(got), type(expected))
    assert np.shape(got) == np.shape(expected) == plan.out_shape, index
    np.testing.assert_array_equal(got, expected)


# ------------------------------------------------------------------ random indexes


def random_int(rng, n):
    return int(rng.integers(-n, n)) if n else None


def random_slice(rng, n):
    def bound():
        return None if rng.random() < 0.3 else int(rng.integers(-n - 2, n + 3))
    step = [None, 1, 1, 2, 3, -1, -2, -3][rng.integers(8)]
    return slice(bound(), bound(), step)


def random_array(rng, n, remaining_shape):
    """One advanced index: lists/arrays with repeats and negatives, or boolean masks."""
    kind = rng.integers(6)
    if kind == 0 and n:
        return [int(v) for v in rng.integers(-n, n, size=rng.integers(0, 6))]
    if kind == 1 and n:
        return rng.integers(-n, n, size=(2, 3))
    if kind == 2:
        return rng.random(n) < 0.5
    if kind == 3 and len(remaining_shape) >= 2:
        k = int(rng.integers(2, len(remaining_shape) + 1))
        return rng.random(remaining_shape[:k]) < 0.4
    if kind == 4:
        return bool(rng.random() < 0.7)
    return np.array([], dtype=np.intp) if not n else np.array([n - 1, 0, n - 1])


def random_index(rng, shape):
    """A random numpy index of at most len(shape) axes, with at most one array."""
    entries, axis, used_array, used_ellipsis = [], 0, False, False
    for _ in range(rng.integers(0, len(shape) + 3)):
        choice = rng.integers(7)
        n = shape[axis] if axis < len(shape) else None
        if choice == 0 and not used_ellipsis:
            entries.append(Ellipsis)
            used_ellipsis = True
        elif choice == 1:
            entries.append(None)
        elif n is None:
            continue
        elif choice == 2 and n:
            entries.append(random_int(rng, n))
            axis += 1
        elif choice == 3 and not used_array:
            entry = random_array(rng, n, shape[axis:])
            entries.append(entry)
            used_array = True
            axis += np.ndim(entry) if isinstance(entry, np.ndarray) and entry.dtype == bool else (
                0 if isinstance(entry, bool) else 1)
        else:
            entries.append(random_slice(rng, n))
            axis += 1
    if used_ellipsis:
        entries = _fit_ellipsis(entries, shape)
    return tuple(entries) if len(entries) != 1 or rng.random() < 0.5 else entries[0]


def _fit_ellipsis(entries, shape):
    """Entries after an Ellipsis were drawn for the axes right after the previous ones; with
    the Ellipsis they apply to the last axes instead. Drop them if their sizes disagree."""
    k = next(i for i, e in enumerate(entries) if e is Ellipsis)
    return entries[:k + 1] if _consumed(entries) > len(shape) else entries


def _consumed(entries):
    total = 0
    for e in entries:
        if isinstance(e, np.ndarray) and e.dtype == bool:
            total += e.ndim
        elif e is not None and e is not Ellipsis and not isinstance(e, bool):
            total += 1
    return total


@pytest.mark.parametrize("seed", range(40))
def test_random_indexes_match_numpy(seed):
    rng = np.random.default_rng(seed)
    checked = 0
    for shape in SHAPES:
        arr = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
        for _ in range(12):
            index = random_index(rng, shape)
            try:
                arr[index]
            except IndexError:
                # numpy rejects it (a mask drawn for other axes after an Ellipsis): so must we
                with pytest.raises(IndexError):
                    plan_read(index, shape)
                continue
            assert_same_as_numpy(arr, index)
            checked += 1
    assert checked > 60  # the generator must produce mostly valid indexes


# ------------------------------------------------------------------ targeted cases

A3 = np.arange(3 * 4 * 5).reshape(3, 4, 5)

CASES = [
    (), Ellipsis, 0, -1, (1, 2, 3), (-3, -4, -5), slice(None), slice(1, None, 2),
    (slice(None, None, -1),), (slice(None), slice(3, 0, -2)), (Ellipsis, 2), (0, Ellipsis),
    (None, 0), (0, None, 1, None), (Ellipsis, None), [2, 0, 0, -1], ([1],), (slice(None), [3, 0]),
    (0, slice(None), [1, 2]), (slice(None), 0, Ellipsis, [1, 2]), ([0, 1], Ellipsis, 0),
    (0, [1, 2], 0), ([[0, 1], [2, 2]], slice(None), 0), np.ones((3, 4), bool),
    A3 % 3 == 0, (0, A3[0] > 7), (A3[:, :, 0] > 100,), (np.array([True, False, True]),),
    (Ellipsis, np.array([False] * 5)), True, False, (0, True), (0, slice(None), True),
    ([1, 2], True), (slice(5, 1), 0), (slice(-100, 100, 7),), np.array(2), (np.int64(-1), np.uint8(2)),
    [], (slice(None), []), ([0, 2],), (slice(None), slice(None), [0, 2, 4]),
]


@pytest.mark.parametrize("index", CASES, ids=[repr(c)[:40] for c in CASES])
def test_targeted_indexes_match_numpy(index):
    assert_same_as_numpy(A3, index)


@pytest.mark.parametrize("index", [(), Ellipsis, None, (None, Ellipsis), True, False])
def test_scalar_dataset(index):
    assert_same_as_numpy(np.array(7.5), index)


def test_scalar_read_gives_numpy_scalar_and_ellipsis_a_0d_array():
    scalar = np.array(3, dtype=np.int16)
    assert isinstance(planned(scalar, ())[1], np.int16)
    zero_d = planned(scalar, Ellipsis)[1]
    assert isinstance(zero_d, np.ndarray) and zero_d.shape == ()


# ------------------------------------------------------------------ what gets read


def test_integers_read_one_element_and_are_squeezed():
    plan = plan_read((2, -1), (5, 6))
    assert plan.axes == ((2, 1, 1), (5, 1, 1))
    assert plan.read_shape == (1, 1) and plan.out_shape == () and plan.local is None


def test_step_slice_stays_a_range():
    plan = plan_read(np.s_[1:10:3, ::2], (10, 5))
    assert plan.axes == ((1, 3, 3), (0, 3, 2))
    assert plan.local is None  # the block is the result: read straight into `out`


def test_negative_step_reads_forwards_then_reverses():
    plan = plan_read(np.s_[::-2], (7,))
    assert plan.axes == ((0, 4, 2),)
    assert plan.local == (slice(None, None, -1),)


def test_lists_read_sorted_unique_values_once():
    plan = plan_read(([5, 1, 5, -1, 3],), (10,))
    (axis,) = plan.axes
    assert axis.dtype == np.uint64 and axis.tolist() == [1, 3, 5, 9]
    assert plan.out_shape == (5,)


def test_evenly_spaced_list_becomes_a_range():
    assert plan_read([4, 0, 2, 2], (10,)).axes == ((0, 3, 2),)


def test_sorted_unique_list_needs_no_post_processing():
    plan = plan_read((slice(None), [1, 4, 6]), (3, 8))
    assert plan.local is None and plan.out_shape == (3, 3)


def test_bool_mask_reads_only_its_true_positions():
    plan = plan_read(np.array([0, 1, 1, 0, 1, 0], bool), (6,))
    assert plan.axes[0].tolist() == [1, 2, 4]


def test_full_mask_reads_its_bounding_box():
    mask = np.zeros((6, 8), bool)
    mask[2, 3] = mask[4, 1] = True
    plan = plan_read(mask, (6, 8))
    assert plan.axes == ((2, 3, 1), (1, 3, 1)) and plan.out_shape == (2,)


def test_empty_selection_reads_nothing():
    assert plan_read(np.s_[3:3], (10,)).is_empty
    assert plan_read(([],), (10,)).is_empty
    assert not plan_read(np.s_[3:4], (10,)).is_empty


# ------------------------------------------------------------------ errors like numpy


@pytest.mark.parametrize("index", [
    5, -6, (0, 4), [0, 5], [-6], (slice(None), slice(None), 0), np.zeros(4, bool),
    np.zeros((4, 5), bool), (Ellipsis, Ellipsis), 1.5, "x".encode(), (0, np.array([0.5])),
    ([0, 1], True, np.array([True, True, True])),
])
def test_invalid_indexes_raise_index_error_like_numpy(index):
    arr = np.zeros((5, 4))
    with pytest.raises(IndexError):
        arr[index]
    with pytest.raises(IndexError):
        plan_read(index, arr.shape)


def test_zero_step_raises_value_error_like_numpy():
    with pytest.raises(ValueError):
        np.zeros(4)[::0]
    with pytest.raises(ValueError):
        plan_read(np.s_[::0], (4,))


def test_huge_unsigned_index_is_out_of_range_not_negative():
    with pytest.raises(IndexError):
        plan_read(np.array([2**64 - 1], dtype=np.uint64), (5,))


def test_two_index_arrays_are_refused_like_h5py():
    with pytest.raises(TypeError, match="Only one indexing vector"):
        plan_read(([0, 1], [1, 2]), (3, 3))


def test_split_fields():
    assert split_fields("x") == ((), ["x"])
    assert split_fields((0, "x", slice(None), "y")) == ((0, slice(None)), ["x", "y"])
    assert split_fields(np.s_[1:2]) == (np.s_[1:2], [])


def _basic_indexes(shape, rng):
    """Integers (Python and numpy, negative too) and forward slices, as many as the axes
    or fewer, plus a few the quick path must leave to the general one."""
    def entry(n):
        kind = rng.integers(5)
        if kind == 0 and n:
            return int(rng.integers(-n, n))
        if kind == 1 and n:
            return np.int64(rng.integers(-n, n))
        bound = lambda: None if rng.random() < 0.3 else int(rng.integers(-n - 3, n + 4))  # noqa: E731
        step = None if rng.random() < 0.4 else int(rng.integers(1, 4))
        return slice(bound(), bound(), step)
    for _ in range(40):
        yield tuple(entry(n) for n in shape[:rng.integers(len(shape) + 1)])
    yield from [5, -9, (True,), slice(None, None, -1), slice(0, 3, 0), (Ellipsis,), 1.5]


@pytest.mark.parametrize("shape", SHAPES)
def test_quick_plan_of_integers_and_slices_equals_the_general_one(shape):
    """The quick path for the common index gives the general planner's plan exactly,
    and leaves everything else (out-of-range integers, booleans, negative or zero
    steps, Ellipsis, floats) to it."""
    from h5turbo.objects import selection
    rng = np.random.default_rng(len(shape) * 31 + sum(shape))
    for index in _basic_indexes(shape, rng):
        quick = selection.plan_basic(index, shape)
        if quick is None:
            continue
        assert quick == selection._plan_general(index, shape), (shape, index)
        arr = np.arange(int(np.prod(shape)), dtype="i4").reshape(shape)
        np.testing.assert_array_equal(quick.finish(emulate_native_read(arr, quick.axes)), arr[index])
    for index in [(True,), slice(None, None, -1), slice(0, 3, 0), (Ellipsis,), 1.5, [0], (0, 0, 0, 0, 0)]:
        assert selection.plan_basic(index, shape) is None, index
    if shape and shape[0]:
        assert selection.plan_basic(shape[0], shape) is None  # out of range: general path raises
