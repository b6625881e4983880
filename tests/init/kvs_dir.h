/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kvs_dir.h: a key-value store in a folder, for weft_init_attr_t.kvs in
 * tests: what a framework's store (torch.distributed's c10d store) gives
 * weft, shared by the ranks of one machine. One file per key, its name the
 * key in hex; a value appears whole (written aside, then renamed). get
 * polls until the key exists or its timeout passes, as the API describes.
 * It counts its calls, so that a test can tell the store was used.
 */
#ifndef WEFT_TESTS_KVS_DIR_H
#define WEFT_TESTS_KVS_DIR_H

#include <stddef.h>

#include "weft.h"

typedef struct kvs_dir {
    char path[512];
    unsigned sets, gets;
    unsigned truncated;   /* gets answered WEFT_ERR_TRUNCATED */
} kvs_dir_t;

/* The store in folder path (created if missing). */
void kvs_dir_open(kvs_dir_t *d, const char *path);
/* d as a weft_kvs_t (ctx is d). */
weft_kvs_t kvs_dir_kvs(kvs_dir_t *d);
/* Whether key exists (no wait). */
int kvs_dir_has(const kvs_dir_t *d, const char *key);

#endif /* WEFT_TESTS_KVS_DIR_H */
