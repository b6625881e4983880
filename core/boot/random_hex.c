/* SPDX-License-Identifier: BSD-3-Clause */
/* random_hex.c: random hex strings for the bootstrap's secrets and names
 * (the file:// rendezvous's token, the job id written to a caller's
 * store). */
#include "config.h"

#include <stdio.h>
#include <sys/random.h>

#include "core/base/error.h"
#include "core/boot/bootstrap.h"

weft_result_t weft__boot_random_hex(char *buf, size_t nbytes, const char *purpose)
{
    unsigned char rnd[32];

    if (nbytes > sizeof(rnd))
        nbytes = sizeof(rnd);
    if (getrandom(rnd, nbytes, 0) != (ssize_t)nbytes)
        return weft__error(WEFT_ERR_SYSTEM, "getrandom: %m (needed for %s)", purpose);
    for (size_t i = 0; i < nbytes; i++)
        snprintf(buf + 2 * i, 3, "%02x", rnd[i]);
    return WEFT_SUCCESS;
}
