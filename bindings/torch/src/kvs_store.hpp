// SPDX-License-Identifier: BSD-3-Clause
//
// kvs_store.hpp: weft's start-up store (weft_kvs_t) over the c10d::Store
// that torch.distributed hands a backend, so that weft meets the other ranks
// through torch's own rendezvous and never opens one of its own.
#pragma once

#include <weft.h>

#include <torch/csrc/distributed/c10d/Store.hpp>

namespace torch_weft {

// The callbacks weft_init calls. No C++ exception leaves them: store
// failures become weft result codes, with the store's message in the log.
// The table stays valid as long as store does; keep both for weft_init.
weft_kvs_t kvs_over_store(c10d::Store *store);

} // namespace torch_weft
