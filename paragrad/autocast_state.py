"""What the layers below paragrad.amp need to know about autocast: whether an op should apply its
autocast policy now, and for which device types at which dtype. paragrad.amp.autocast writes
this state, the ops listed in ops/autocast_policy.py read `on`, and the backward engine turns it
off while it runs (torch's backward ops are not autocast). A leaf module: it imports nothing."""

# the one flag an op checks: some device type has autocast enabled, and no autocast op (whose
# inner ops must not cast again) and no backward pass is running
on = False

enabled = {}            # device type ("cpu", "cuda") -> bool
dtypes = {}             # device type -> the DType lower-precision ops run in
cache_enabled = {}      # device type -> whether parameters' casts are cached for the context
weight_cache = {}       # id(parameter) -> (parameter, its cast): one cast per context
nesting = [0]           # autocast contexts entered and not yet left (the cache empties at 0)


def refresh():
    """Recompute `on` after a context enters or exits."""
    global on
    on = any(enabled.values())


def pause():
    """Turn autocast off for an inner computation: -> what resume() restores."""
    global on
    was, on = on, False
    return was


def resume(was):
    global on
    on = was
