// SPDX-License-Identifier: BSD-3-Clause
//
// kvs_store.cpp: weft_kvs_t's set and get on a c10d::Store.
#include "kvs_store.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace torch_weft {

namespace {

void report(const char *what, const char *key, const std::exception &e)
{
    // weft_last_error belongs to weft; the store's reason goes to stderr so
    // that the timeout or refusal weft then reports can be traced to it.
    std::fprintf(stderr, "torch_weft: store %s of \"%s\" failed: %s\n", what, key, e.what());
}

weft_result_t store_set(void *ctx, const char *key, const void *val, size_t len)
{
    auto *store = static_cast<c10d::Store *>(ctx);
    const auto *bytes = static_cast<const uint8_t *>(val);

    try {
        store->set(key, std::vector<uint8_t>(bytes, bytes + len));
        return WEFT_SUCCESS;
    } catch (const std::bad_alloc &) {
        return WEFT_ERR_NO_MEMORY;
    } catch (const std::exception &e) {
        report("set", key, e);
        return WEFT_ERR_BOOTSTRAP;
    }
}

// c10d's get waits for a missing key only as long as the store's own
// timeout, shared by every user of the store; wait() takes one of its own,
// so get() below finds the key present and returns at once.
weft_result_t store_get(void *ctx, const char *key, void *val, size_t cap, size_t *len,
                        int timeout_ms)
{
    auto *store = static_cast<c10d::Store *>(ctx);
    std::vector<uint8_t> value;

    const auto start = std::chrono::steady_clock::now();
    try {
        store->wait({ key }, std::chrono::milliseconds(timeout_ms));
    } catch (const std::exception &e) {
        // TCPStore and FileStore both throw c10::Error when the wait ends
        // with the key still missing, and weft then names the rank it
        // waited for. An error well before the timeout is the store's own
        // (its server gone, a peer speaking another protocol).
        const auto waited = std::chrono::steady_clock::now() - start;
        if (waited >= std::chrono::milliseconds(timeout_ms) * 9 / 10)
            return WEFT_ERR_TIMEOUT;
        report("wait", key, e);
        return WEFT_ERR_BOOTSTRAP;
    }
    try {
        value = store->get(key);
    } catch (const std::bad_alloc &) {
        return WEFT_ERR_NO_MEMORY;
    } catch (const std::exception &e) {
        report("get", key, e);
        return WEFT_ERR_BOOTSTRAP;
    }
    *len = value.size();
    if (cap > 0 && !value.empty())
        std::memcpy(val, value.data(), std::min(cap, value.size()));
    return value.size() > cap ? WEFT_ERR_TRUNCATED : WEFT_SUCCESS;
}

} // namespace

weft_kvs_t kvs_over_store(c10d::Store *store)
{
    weft_kvs_t kvs;

    kvs.ctx = store;
    kvs.set = store_set;
    kvs.get = store_get;
    return kvs;
}

} // namespace torch_weft
