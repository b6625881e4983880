/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_addr_record.c: the address records ranks publish at the
 * rendezvous (core/transport/addr_record.c), with the topology summary
 * inside them (topo/topo_summary.c) and the sockets transport's address
 * (plugins/sockets/sockets_addr.c), which its reach() and connect() take
 * from other ranks' records.
 *
 * The input is read as a whole record, and on its own as a sockets
 * address and as a topology summary. Properties: a record that parses has
 * at most WEFT__PLUGIN_MAX entries, each a NUL-terminated name and an
 * address of at most WEFT_TRANSPORT_ADDR_MAX bytes copied from the
 * record where the format puts it, all within the input; a refusal is
 * WEFT_ERR_BOOTSTRAP naming the rank; a summary's strings end within
 * their fields and decoding is stable over a round trip; a sockets
 * address that is valid converts to a socket address and back unchanged.
 */
#include "config.h"

#include <arpa/inet.h>
#include <string.h>

#include "core/base/error.h"
#include "core/transport/addr_record.h"
#include "plugins/sockets/sockets.h"
#include "tests/fuzz/fuzz.h"

#define RANK 7

static void check_summary(const weft__topo_summary_t *s, const char *host_id)
{
    FUZZ_REQUIRE(strnlen(s->gpu, sizeof(s->gpu)) < sizeof(s->gpu), "gpu not terminated");
    FUZZ_REQUIRE(strnlen(s->nic, sizeof(s->nic)) < sizeof(s->nic), "nic not terminated");
    FUZZ_REQUIRE(strnlen(s->machine, sizeof(s->machine)) < sizeof(s->machine),
                 "machine not terminated");
    FUZZ_REQUIRE(!strcmp(s->host_id, host_id), "host id '%s', given '%s'", s->host_id, host_id);
}

/* decode(encode(decode(wire))) is decode(wire): what one rank reads is
 * what it would tell another. */
static void summary_round_trip(const unsigned char *wire, const char *host_id)
{
    weft__topo_summary_t a, b;
    unsigned char again[WEFT__TOPO_SUMMARY_WIRE];

    weft__topo_summary_decode(wire, host_id, &a);
    check_summary(&a, host_id);
    memset(again, 0, sizeof(again));
    weft__topo_summary_encode(&a, again);
    weft__topo_summary_decode(again, host_id, &b);
    FUZZ_REQUIRE(a.numa == b.numa && a.package == b.package && a.ngpus == b.ngpus &&
                 a.nnics == b.nnics && a.nrdma_active == b.nrdma_active && a.cpu == b.cpu &&
                 a.ncpus == b.ncpus && !strcmp(a.gpu, b.gpu) && !strcmp(a.nic, b.nic) &&
                 !strcmp(a.machine, b.machine) && !strcmp(a.host_id, b.host_id),
                 "a summary changes over a round trip");
    /* Whatever the summaries say, a rank shares its node and machine
     * with itself, and comparing is symmetric. */
    FUZZ_REQUIRE(weft__topo_shared(&a, &a) & WEFT__TOPO_SHARE_NODE, "not its own node");
    FUZZ_REQUIRE(weft__topo_shared(&a, &b) == weft__topo_shared(&b, &a), "asymmetric");
}

static void sockets_address(const void *blob, size_t len)
{
    struct sock_addr a, back;
    struct sockaddr_storage ss;
    socklen_t sl;
    char text[80];

    if (!weft__sock_addr_valid(blob, len))
        return;
    FUZZ_REQUIRE(len == sizeof(a), "a valid sockets address of %zu bytes", len);
    memcpy(&a, blob, sizeof(a));
    sl = weft__sock_addr_to_sa(&a, &ss);
    FUZZ_REQUIRE(ss.ss_family == a.family && sl == (a.family == AF_INET6
                                                    ? sizeof(struct sockaddr_in6)
                                                    : sizeof(struct sockaddr_in)),
                 "family %u became %u, %u bytes", a.family, ss.ss_family, (unsigned)sl);
    weft__sock_addr_from_sa(&back, (struct sockaddr *)&ss);
    FUZZ_REQUIRE(back.magic == a.magic && back.version == a.version &&
                 back.family == a.family && back.port == a.port &&
                 !memcmp(back.ip, a.ip, a.family == AF_INET6 ? 16 : 4),
                 "an address changes over a round trip");
    weft__sock_sa_str((struct sockaddr *)&ss, text, sizeof(text));
    FUZZ_REQUIRE(strnlen(text, sizeof(text)) < sizeof(text) && strchr(text, ':'),
                 "address text '%s'", text);
}

static void whole_record(const uint8_t *data, size_t size)
{
    static weft__addr_record_t rec; /* 4 KiB per entry: not on the stack */
    const uint8_t *p = data + WEFT__ADDR_RECORD_HEADER;
    weft_result_t rc = weft__addr_record_parse(RANK, data, size, &rec);
    char name[16];

    if (rc != WEFT_SUCCESS) {
        snprintf(name, sizeof(name), "rank %d", RANK);
        FUZZ_REQUIRE(rc == WEFT_ERR_BOOTSTRAP, "refused with %d", rc);
        FUZZ_REQUIRE(strstr(weft__get_error(), name), "refusal does not name the rank: %s",
                     weft__get_error());
        return;
    }
    FUZZ_REQUIRE(size >= WEFT__ADDR_RECORD_HEADER, "a record of %zu bytes parsed", size);
    FUZZ_REQUIRE(rec.n >= 0 && rec.n <= WEFT__PLUGIN_MAX, "%d entries", rec.n);
    FUZZ_REQUIRE(strnlen(rec.host_id, sizeof(rec.host_id)) < sizeof(rec.host_id),
                 "host id not terminated");
    check_summary(&rec.topo, rec.host_id);
    for (int i = 0; i < rec.n; i++) {
        const weft__addr_entry_t *e = &rec.entries[i];

        FUZZ_REQUIRE(strnlen(e->name, sizeof(e->name)) < sizeof(e->name), "name %d", i);
        FUZZ_REQUIRE(e->len <= WEFT_TRANSPORT_ADDR_MAX, "entry %d of %zu bytes", i, e->len);
        FUZZ_REQUIRE(e->addr == e->buf, "entry %d does not point at its copy", i);
        FUZZ_REQUIRE((size_t)(p - data) + WEFT__ADDR_ENTRY_HEADER + e->len <= size,
                     "entry %d reaches past the record", i);
        FUZZ_REQUIRE(!memcmp(e->addr, p + WEFT__ADDR_ENTRY_HEADER, e->len),
                     "entry %d is not the record's bytes", i);
        if (!strcmp(e->name, SOCK_NAME))
            sockets_address(e->addr, e->len);
        p += WEFT__ADDR_ENTRY_HEADER + e->len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    whole_record(data, size);
    sockets_address(data, size);
    if (size >= WEFT__TOPO_SUMMARY_WIRE) {
        char host[16];

        snprintf(host, sizeof(host), "h%zu", size % 3);
        summary_round_trip(data, host);
    }
    return 0;
}
