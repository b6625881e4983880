/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun.h: the parts of the launcher weftrun, shared between its files.
 *
 * weftrun.c supervises the job (signals, exits, timeouts); the other files
 * each do one thing for it: weftrun_args.c reads the command line,
 * weftrun_env.c makes the token and the ranks' environment,
 * weftrun_port.c chooses and shares the program's framework's port,
 * weftrun_bind.c decides which CPUs each rank may run on,
 * weftrun_spawn.c starts one rank, weftrun_tag.c prefixes output lines.
 * Everything here runs on weftrun's main thread; the store server (when this
 * weftrun hosts it) runs in a thread of its own that these files never touch.
 */
#ifndef WEFT_TOOLS_WEFTRUN_H
#define WEFT_TOOLS_WEFTRUN_H

#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WEFTRUN_MAX_NPROC 65536
#define WEFTRUN_MAX_NNODES 65536
#define WEFTRUN_MAX_WORLD (1 << 24)
#define WEFTRUN_TOKEN_HEX 32           /* characters of a generated token */
#define WEFTRUN_DEFAULT_KILL_GRACE 3.0 /* seconds between SIGTERM and SIGKILL */
#define WEFTRUN_EXIT_USAGE 2
#define WEFTRUN_EXIT_TIMEOUT 124

/* ------------------------------------------------------------ command line */

/* --bind-to. */
enum weftrun_bind_policy {
    WEFTRUN_BIND_DEFAULT, /* not given: a share of the cores each */
    WEFTRUN_BIND_NONE,
    WEFTRUN_BIND_CORE,
    WEFTRUN_BIND_NUMA,
    WEFTRUN_BIND_SOCKET
};

struct weftrun_opts {
    int nproc;               /* ranks on this node */
    int nnodes;
    int node_rank;           /* -1 until given */
    const char *master_addr; /* NULL until given */
    int master_port;         /* weft's store's; -1 until given */
    int tag_output;
    double timeout_s;        /* 0: none */
    double kill_grace_s;
    const char *job_name;    /* NULL: not given */
    enum weftrun_bind_policy bind_to;
    int report_bindings;
    char **argv;             /* the program and its arguments, NULL-terminated */
};

enum weftrun_args_result {
    WEFTRUN_ARGS_RUN,  /* run the job */
    WEFTRUN_ARGS_DONE, /* --help or --version printed: exit 0 */
    WEFTRUN_ARGS_BAD   /* the error and the usage went to stderr: exit 2 */
};

enum weftrun_args_result weftrun_parse_args(int argc, char **argv, struct weftrun_opts *o);

/* ------------------------------------------------------------ environment */

/* Fills hex with WEFTRUN_TOKEN_HEX random hex digits and a NUL from
 * getrandom(). Returns 0, or -1 with errno set. */
int weftrun_make_token(char hex[WEFTRUN_TOKEN_HEX + 1]);

/* What every rank of this node shares. */
struct weftrun_env_job {
    int world_size, local_world_size, group_rank, group_world_size;
    const char *master_addr; /* node 0: weft's store and the framework's */
    int store_port;          /* weft's store: WEFT_MASTER_PORT */
    int framework_port;      /* the program's framework: MASTER_PORT */
    const char *token;
    const char *job_name; /* NULL: leave WEFT_JOB_NAME as inherited */
};

/* weftrun's environment without the variables weftrun sets, then those
 * variables; the per-rank ones (RANK, LOCAL_RANK, ROLE_RANK, WEFT_RANK,
 * WEFT_LOCAL_RANK) point at the buffers below, which weftrun_env_rank
 * rewrites. */
struct weftrun_env {
    char **vars;
    size_t nvars;        /* entries before the terminating NULL */
    size_t first_owned;  /* vars[first_owned..] were allocated here */
    char rank_var[32], local_rank_var[40], role_rank_var[40];
    char weft_rank_var[40], weft_local_rank_var[48];
};

/* Returns 0, or -1 with errno set (ENOMEM). */
int weftrun_env_init(struct weftrun_env *env, const struct weftrun_env_job *job);
/* The environment of one rank; valid until the next call or fini. */
char **weftrun_env_rank(struct weftrun_env *env, int rank, int local_rank);
void weftrun_env_fini(struct weftrun_env *env);

/* ------------------------------------------------------------ framework port */

/* MASTER_PORT, the port of the program's own framework (torch.distributed's
 * env:// rendezvous listens there), apart from weft's store. */
struct weftrun_port {
    int port;    /* what the ranks get; 0 until decided */
    int user;    /* MASTER_PORT of weftrun's own environment; 0: unset */
    int hold_fd; /* node 0: a socket bound to port, so that nothing takes
                  * it before the ranks start; -1: none */
};

/* Where weft's store is, for the weftrun of every node. */
struct weftrun_port_store {
    const char *addr;       /* --master-addr, as the other nodes reach it */
    const char *local_addr; /* how node 0 reaches its own store */
    int port;
    const char *token;
};

enum weftrun_port_result {
    WEFTRUN_PORT_OK,
    WEFTRUN_PORT_FAILED,     /* the message went to stderr */
    WEFTRUN_PORT_INTERRUPTED /* a signal arrived on sfd (left there) */
};

/* Before the store starts: reads MASTER_PORT of weftrun's environment and,
 * on node 0, holds it; one equal to --master-port is left to the store.
 * Returns 0, or -1 when it is not a port (the message went to stderr). */
int weftrun_port_begin(struct weftrun_port *fp, const struct weftrun_opts *o);
/* Once node 0's store listens. Node 0 keeps the user's port or holds a free
 * one, and on several nodes leaves it in the store; the other nodes wait
 * for node 0's store until deadline_ms (CLOCK_MONOTONIC milliseconds) and
 * take the port from it, returning early when sfd (weftrun's signalfd)
 * becomes readable. */
enum weftrun_port_result weftrun_port_decide(struct weftrun_port *fp,
                                             const struct weftrun_opts *o,
                                             const struct weftrun_port_store *store,
                                             int64_t deadline_ms, int sfd);
/* Lets the port go, for the framework's rank 0 to listen on. */
void weftrun_port_release(struct weftrun_port *fp);

/* ------------------------------------------------------------ binding */

/* The CPUs one or more ranks are bound to, as sched_setaffinity takes
 * them. */
struct weftrun_bind_place {
    cpu_set_t *set;
    char desc[48]; /* "core 3", "NUMA node 1", "package 0", "cores 0-3" */
    char *list;    /* its CPUs, "0-3,8", as in Cpus_allowed_list */
};

/* Where each local rank goes: decided once, before the first fork, so
 * that the child only calls sched_setaffinity. */
struct weftrun_bind_plan {
    int nproc;
    int required;    /* explicitly asked for: a rank that cannot bind fails */
    size_t setsize;  /* bytes of every place's set */
    int nplaces;
    struct weftrun_bind_place *places;
    int *rank_place; /* per local rank: index into places, -1 unbound */
    char *inherited; /* weftrun's own CPUs as a list, what unbound ranks get */
};

/* Decides the binding of nproc local ranks under policy, from the topology
 * of this host (or of WEFT_TOPO_FILE) cut down to the CPUs weftrun may
 * use. What cannot be done (no topology, more ranks than cores) is said
 * on stderr and done as well as it can: ranks run unbound or share cores;
 * the default policy (a share of the cores each) falls back to none
 * without a word. Returns 0, or -1
 * when out of memory (the message went to stderr). */
int weftrun_bind_plan(struct weftrun_bind_plan *plan, enum weftrun_bind_policy policy,
                      int nproc);
/* The set for local rank i, NULL to leave its CPUs alone. */
const cpu_set_t *weftrun_bind_set(const struct weftrun_bind_plan *plan, int local_rank);
/* "weftrun: rank R bound to core 3: cpus 3" (or "not bound: cpus 0-7") to
 * stderr, for --report-bindings. */
void weftrun_bind_report(const struct weftrun_bind_plan *plan, int rank, int local_rank);
void weftrun_bind_fini(struct weftrun_bind_plan *plan);

/* ------------------------------------------------------------ starting a rank */

struct weftrun_spawn_req {
    char **argv;
    char **envp;
    int rank;
    int stdin_null;                  /* give the rank /dev/null as stdin */
    int tag_output;                  /* stdout and stderr into pipes */
    const sigset_t *child_mask;      /* signal mask weftrun started with */
    const struct sigaction *sigpipe; /* SIGPIPE action weftrun started with */
    const cpu_set_t *cpus;           /* NULL: keep weftrun's CPUs */
    size_t cpus_size;                /* bytes of *cpus */
    int bind_required;               /* not binding fails the rank */
};

enum weftrun_spawn_result {
    WEFTRUN_SPAWN_OK,
    WEFTRUN_SPAWN_EXEC_FAILED, /* the process exists but could not run the
                                * program; it exits with *exit_code */
    WEFTRUN_SPAWN_NO_PROCESS   /* fork or pipe failed; nothing to reap */
};

/* Starts one rank in a process group of its own, with PR_SET_PDEATHSIG so
 * that it dies with weftrun. Returns after the rank exec'd the program or
 * failed to; on failure the message went to stderr and *exit_code is the
 * status to leave with. *out_fd and *err_fd get the read ends of the output
 * pipes (non-blocking) with tag_output, -1 without. */
enum weftrun_spawn_result weftrun_spawn(const struct weftrun_spawn_req *req, pid_t *pid,
                                        int *out_fd, int *err_fd, int *exit_code);

/* ------------------------------------------------------------ tagged output */

#define WEFTRUN_TAG_BUF_MIN 4096
#define WEFTRUN_TAG_LINE_MAX (1u << 20) /* longer lines come out in pieces */

/* One output stream of one rank: bytes read from fd, written to out line by
 * line, each line prefixed "[rank]:". */
struct weftrun_tag {
    int fd;      /* read end of the rank's pipe; -1 once closed */
    int out;     /* 1 or 2 */
    int midline; /* a piece of a line longer than WEFTRUN_TAG_LINE_MAX is out */
    size_t len, cap;
    char *buf;
    char prefix[24];
    size_t prefix_len;
};

/* Returns 0, or -1 when out of memory (then fd is closed). */
int weftrun_tag_init(struct weftrun_tag *t, int fd, int out, int rank);
/* Reads and writes what is there now, without blocking; at end of file
 * closes fd. */
void weftrun_tag_read(struct weftrun_tag *t);
/* Reads what is left without blocking, writes the unfinished last line
 * with a newline, closes fd and frees the buffer. */
void weftrun_tag_finish(struct weftrun_tag *t);

#endif /* WEFT_TOOLS_WEFTRUN_H */
