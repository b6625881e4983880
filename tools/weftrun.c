/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weftrun.c: weft's launcher. Starts this node's ranks, hosts weft's
 * rendezvous store (always on one node, on node 0 of several), gives the
 * program's own framework a port of its own (weftrun_port.c), and
 * supervises them: SIGINT, SIGTERM and SIGHUP go on to every rank, the
 * first rank to fail (or --timeout) stops all of them, and weftrun waits for
 * every rank before it exits with the status that decided the job.
 *
 * One thread, one poll(): a signalfd (SIGCHLD and the forwarded signals
 * are blocked, so they arrive only there), the ranks' output pipes with
 * --tag-output, and the nearest deadline (timeout or SIGKILL) as timeout.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/boot/init_method.h"
#include "core/boot/store.h"
#include "core/progress/shm_sweep.h"
#include "tools/weftrun.h"

/* While processes the ranks left behind are being stopped, SIGCHLD tells
 * weftrun (the subreaper) only about those whose parent is gone already:
 * it looks at the process groups again this often. */
#define LEFTOVER_CHECK_MS 100

struct rank_proc {
    int rank;
    pid_t pid;     /* also the id of its process group */
    int running;   /* not reaped yet */
    int leftover;  /* its group outlived it */
    struct weftrun_tag out, err;
};

struct job {
    struct weftrun_opts opts;
    struct rank_proc *procs;
    int nstarted;
    int nrunning;
    int sfd;
    int status;          /* exit status decided so far; -1 while none */
    int signal_received; /* last SIGINT/SIGTERM/SIGHUP weftrun got; 0: none */
    int stopping;        /* SIGTERM (or the forwarded signal) went out */
    int kill_pending;    /* SIGKILL follows at kill_at */
    int timeout_pending;
    uint64_t kill_at, timeout_at; /* CLOCK_MONOTONIC milliseconds */
    struct pollfd *pfds;
    struct weftrun_tag **pfd_tags;
};

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Rounded up, so that a deadline never comes early; s is at most 1e9. */
static uint64_t seconds_to_ms(double s)
{
    uint64_t ms = (uint64_t)(s * 1000.0);

    return (double)ms < s * 1000.0 ? ms + 1 : ms;
}

/* The rank's whole process group, so that what it started goes too. */
static void signal_rank(const struct rank_proc *p, int sig)
{
    if (kill(-p->pid, sig) != 0 && errno == ESRCH)
        kill(p->pid, sig);
}

static void signal_running(struct job *job, int sig)
{
    for (int i = 0; i < job->nstarted; i++)
        if (job->procs[i].running)
            signal_rank(&job->procs[i], sig);
}

/* Sends sig now and arms SIGKILL --kill-grace later, once per job. */
static void stop_job(struct job *job, int sig)
{
    signal_running(job, sig);
    if (job->stopping)
        return;
    job->stopping = 1;
    job->kill_pending = 1;
    job->kill_at = now_ms() + seconds_to_ms(job->opts.kill_grace_s);
}

static void decide(struct job *job, int status)
{
    if (job->status < 0)
        job->status = status;
}

static void report_exit(const struct rank_proc *p, int wstatus)
{
    if (WIFEXITED(wstatus))
        fprintf(stderr, "weftrun: rank %d (pid %ld) exited with status %d\n", p->rank,
                (long)p->pid, WEXITSTATUS(wstatus));
    else
        fprintf(stderr, "weftrun: rank %d (pid %ld) was killed by signal %d (%s)\n", p->rank,
                (long)p->pid, WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
}

static void rank_exited(struct job *job, struct rank_proc *p, int wstatus)
{
    int status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);

    p->running = 0;
    job->nrunning--;
    /* Its last words come before weftrun's message about it. */
    if (job->opts.tag_output) {
        weftrun_tag_read(&p->out);
        weftrun_tag_read(&p->err);
    }
    if (status == 0)
        return;
    /* The first failure decides and is reported; what follows is mostly
     * the ranks weftrun itself is stopping. */
    if (job->status < 0) {
        report_exit(p, wstatus);
        job->status = status;
    }
    stop_job(job, SIGTERM);
}

static struct rank_proc *find_proc(struct job *job, pid_t pid)
{
    for (int i = 0; i < job->nstarted; i++)
        if (job->procs[i].pid == pid && job->procs[i].running)
            return &job->procs[i];
    return NULL;
}

/* Also reaps the ranks' orphaned descendants, which come to weftrun as
 * the child subreaper. */
static void reap(struct job *job)
{
    pid_t pid;
    int wstatus;

    while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0) {
        struct rank_proc *p = find_proc(job, pid);

        if (p != NULL)
            rank_exited(job, p, wstatus);
    }
}

static void forward_signal(struct job *job, int sig)
{
    fprintf(stderr, "weftrun: got signal %d (%s); passing it on to every rank\n", sig,
            strsignal(sig));
    job->signal_received = sig;
    stop_job(job, sig);
}

static void handle_signals(struct job *job)
{
    struct signalfd_siginfo si;

    while (read(job->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
        if (si.ssi_signo != SIGCHLD)
            forward_signal(job, (int)si.ssi_signo);
    /* SIGCHLD merges; reap whatever exited, whether or not one arrived. */
    reap(job);
}

static void check_deadlines(struct job *job)
{
    uint64_t now = now_ms();

    if (job->timeout_pending && now >= job->timeout_at) {
        job->timeout_pending = 0;
        fprintf(stderr, "weftrun: the job ran longer than --timeout %g seconds; stopping it\n",
                job->opts.timeout_s);
        decide(job, WEFTRUN_EXIT_TIMEOUT);
        stop_job(job, SIGTERM);
    }
    if (job->kill_pending && now >= job->kill_at) {
        job->kill_pending = 0;
        signal_running(job, SIGKILL);
    }
}

static int poll_timeout(const struct job *job)
{
    uint64_t now = now_ms(), next = UINT64_MAX;

    if (job->timeout_pending && job->timeout_at < next)
        next = job->timeout_at;
    if (job->kill_pending && job->kill_at < next)
        next = job->kill_at;
    if (next == UINT64_MAX)
        return -1;
    if (next <= now)
        return 0;
    return next - now > INT_MAX ? INT_MAX : (int)(next - now);
}

static int gather_pollfds(struct job *job)
{
    int n = 0;

    job->pfds[n] = (struct pollfd){ .fd = job->sfd, .events = POLLIN };
    job->pfd_tags[n++] = NULL;
    for (int i = 0; i < job->nstarted && job->opts.tag_output; i++) {
        struct weftrun_tag *tags[2] = { &job->procs[i].out, &job->procs[i].err };

        for (int k = 0; k < 2; k++) {
            if (tags[k]->fd < 0)
                continue;
            job->pfds[n] = (struct pollfd){ .fd = tags[k]->fd, .events = POLLIN };
            job->pfd_tags[n++] = tags[k];
        }
    }
    return n;
}

/* poll() itself failing leaves no way to watch the ranks: end them now
 * and wait for them, rather than leave them behind. */
static void abandon(struct job *job, int err)
{
    fprintf(stderr, "weftrun: poll: %s; killing every rank\n", strerror(err));
    decide(job, 1);
    signal_running(job, SIGKILL);
    for (int i = 0; i < job->nstarted; i++) {
        struct rank_proc *p = &job->procs[i];
        int wstatus;

        while (p->running && waitpid(p->pid, &wstatus, 0) < 0 && errno == EINTR)
            ;
        if (p->running) {
            p->running = 0;
            job->nrunning--;
        }
    }
}

static void supervise(struct job *job)
{
    while (job->nrunning > 0) {
        int n = gather_pollfds(job);
        int r = poll(job->pfds, (nfds_t)n, poll_timeout(job));

        if (r < 0 && errno != EINTR) {
            abandon(job, errno);
            return;
        }
        check_deadlines(job);
        if (r <= 0)
            continue;
        if (job->pfds[0].revents != 0)
            handle_signals(job);
        for (int i = 1; i < n; i++)
            if (job->pfds[i].revents != 0)
                weftrun_tag_read(job->pfd_tags[i]);
    }
}

static int groups_left(struct job *job)
{
    int left = 0;

    for (int i = 0; i < job->nstarted; i++) {
        struct rank_proc *p = &job->procs[i];

        if (p->leftover && kill(-p->pid, 0) != 0)
            p->leftover = 0;
        left += p->leftover;
    }
    return left;
}

/* A rank's process group that outlived it holds what the rank started in
 * the background. No orphans: they get SIGTERM, and SIGKILL after
 * --kill-grace. As the subreaper weftrun reaps them itself, so that a dead
 * one does not linger in its group as a zombie of a slow init. */
static void stop_leftovers(struct job *job)
{
    uint64_t deadline;

    for (int i = 0; i < job->nstarted; i++)
        job->procs[i].leftover = 1;
    reap(job);
    if (groups_left(job) == 0)
        return;
    fprintf(stderr, "weftrun: processes the ranks started are still running; stopping them\n");
    for (int i = 0; i < job->nstarted; i++)
        if (job->procs[i].leftover)
            kill(-job->procs[i].pid, SIGTERM);
    deadline = now_ms() + seconds_to_ms(job->opts.kill_grace_s);
    while (groups_left(job) > 0) {
        uint64_t now = now_ms();
        struct pollfd pfd = { .fd = job->sfd, .events = POLLIN };
        struct signalfd_siginfo si;

        if (now >= deadline) {
            for (int i = 0; i < job->nstarted; i++)
                if (job->procs[i].leftover)
                    kill(-job->procs[i].pid, SIGKILL);
            return;
        }
        poll(&pfd, 1, (int)(deadline - now < LEFTOVER_CHECK_MS ? deadline - now
                                                                : LEFTOVER_CHECK_MS));
        while (read(job->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
            if (si.ssi_signo != SIGCHLD)
                job->signal_received = (int)si.ssi_signo;
        reap(job);
    }
}

/* Which store to host and what the ranks are told about it. On one node
 * the port is a free one unless given, so that jobs side by side never
 * collide. On several, node 0 binds --master-addr, or every address when
 * that is not one of its own (a name the other nodes resolve elsewhere);
 * st->local_addr is how node 0 itself reaches it. */
static int host_store(const struct job *job, const char *token, struct weftrun_port_store *st,
                      weft__store_server_t **srv)
{
    const struct weftrun_opts *o = &job->opts;
    int world = o->nnodes * o->nproc;
    char first_error[512];

    *srv = NULL;
    st->token = token;
    if (o->nnodes > 1) {
        st->addr = st->local_addr = o->master_addr;
        st->port = o->master_port;
        if (o->node_rank != 0)
            return 0;
        if (weft__store_server_start(o->master_addr, o->master_port, token, world, o->job_name,
                                     srv) == WEFT_SUCCESS)
            return 0;
        snprintf(first_error, sizeof(first_error), "%s", weft__get_error());
        /* Every address includes IPv4's loopback, dual-stack or not. */
        st->local_addr = "127.0.0.1";
        if (weft__store_server_start(NULL, o->master_port, token, world, o->job_name, srv) ==
            WEFT_SUCCESS)
            return 0;
        fprintf(stderr, "weftrun: cannot host the rendezvous store on %s port %d: %s\n",
                o->master_addr, o->master_port, first_error);
        return -1;
    }
    st->addr = st->local_addr = o->master_addr != NULL ? o->master_addr : "127.0.0.1";
    if (weft__store_server_start(st->addr, o->master_port > 0 ? o->master_port : 0, token,
                                 world, o->job_name, srv) != WEFT_SUCCESS) {
        fprintf(stderr, "weftrun: cannot host the rendezvous store on %s: %s\n", st->addr,
                weft__get_error());
        return -1;
    }
    st->port = weft__store_server_port(*srv);
    return 0;
}

/* How long the other nodes wait for node 0's store and the framework's
 * port: as long as their ranks' weft_init would wait for it (WEFT_TIMEOUT,
 * which weft_init checks itself), and not past --timeout. */
static uint64_t node0_deadline(const struct job *job)
{
    const char *v = getenv("WEFT_TIMEOUT");
    uint64_t wait_ms = WEFT__DEFAULT_TIMEOUT_MS, deadline;
    char *end;
    long s;

    if (v != NULL && *v != '\0') {
        errno = 0;
        s = strtol(v, &end, 10);
        if (errno == 0 && *end == '\0' && s >= 1 && s <= INT_MAX / 1000)
            wait_ms = (uint64_t)s * 1000u;
    }
    deadline = now_ms() + wait_ms;
    return job->timeout_pending && job->timeout_at < deadline ? job->timeout_at : deadline;
}

/* The framework's port; returns the status to exit with, or -1 to go on. */
static int framework_port(struct job *job, struct weftrun_port *fp,
                          const struct weftrun_port_store *st)
{
    uint64_t deadline = node0_deadline(job);

    for (;;) {
        struct signalfd_siginfo si;
        int sig = 0;

        switch (weftrun_port_decide(fp, &job->opts, st, (int64_t)deadline, job->sfd)) {
        case WEFTRUN_PORT_OK:
            return -1;
        case WEFTRUN_PORT_FAILED:
            return job->timeout_pending && now_ms() >= job->timeout_at ? WEFTRUN_EXIT_TIMEOUT
                                                                        : 1;
        case WEFTRUN_PORT_INTERRUPTED:
            break;
        }
        while (read(job->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
            if (si.ssi_signo != SIGCHLD)
                sig = (int)si.ssi_signo;
        if (sig != 0) {
            fprintf(stderr, "weftrun: got signal %d (%s) before any rank started\n", sig,
                    strsignal(sig));
            return 128 + sig;
        }
    }
}

/* One node makes its own secret. Several must share one, which only the
 * user can hand to every node. */
static const char *job_token(const struct job *job, char hex[WEFTRUN_TOKEN_HEX + 1])
{
    const char *token;

    if (job->opts.nnodes == 1) {
        if (weftrun_make_token(hex) != 0) {
            fprintf(stderr, "weftrun: getrandom: %s\n", strerror(errno));
            return NULL;
        }
        return hex;
    }
    token = getenv("WEFT_AUTH_TOKEN");
    if (token != NULL)
        return token;
    fprintf(stderr, "weftrun: WEFT_AUTH_TOKEN is not set, so the store accepts any client; "
                    "set the same secret on every node\n");
    return "";
}

/* Starts the ranks one after the other; a rank that cannot start, or a
 * signal meanwhile, stops the job. */
static void start_ranks(struct job *job, struct weftrun_env *env,
                        const struct weftrun_bind_plan *bind, const sigset_t *child_mask,
                        const struct sigaction *sigpipe)
{
    const struct weftrun_opts *o = &job->opts;
    /* A terminal would stop a rank that reads it (SIGTTIN: the rank is not
     * in the foreground process group); other input goes to rank 0 only,
     * like mpirun. */
    int stdin_to_rank0 = !isatty(0);

    for (int i = 0; i < o->nproc && !job->stopping; i++) {
        struct rank_proc *p = &job->procs[job->nstarted];
        int rank = o->node_rank * o->nproc + i;
        struct weftrun_spawn_req req = {
            .argv = o->argv,
            .envp = weftrun_env_rank(env, rank, i),
            .rank = rank,
            .stdin_null = !(rank == 0 && stdin_to_rank0),
            .tag_output = o->tag_output,
            .child_mask = child_mask,
            .sigpipe = sigpipe,
            .cpus = weftrun_bind_set(bind, i),
            .cpus_size = bind->setsize,
            .bind_required = bind->required,
        };
        int out_fd, err_fd, status;
        enum weftrun_spawn_result res;

        if (o->report_bindings)
            weftrun_bind_report(bind, rank, i);
        res = weftrun_spawn(&req, &p->pid, &out_fd, &err_fd, &status);

        if (res == WEFTRUN_SPAWN_NO_PROCESS) {
            decide(job, status);
            stop_job(job, SIGTERM);
            return;
        }
        p->rank = rank;
        p->running = 1;
        job->nstarted++;
        job->nrunning++;
        if (o->tag_output) {
            int out_ok = weftrun_tag_init(&p->out, out_fd, 1, rank) == 0;
            int err_ok = weftrun_tag_init(&p->err, err_fd, 2, rank) == 0;

            if (!out_ok || !err_ok) {
                fprintf(stderr, "weftrun: out of memory for the output of rank %d\n", rank);
                res = WEFTRUN_SPAWN_EXEC_FAILED;
                status = 1;
            }
        }
        if (res == WEFTRUN_SPAWN_EXEC_FAILED) {
            decide(job, status);
            stop_job(job, SIGTERM);
            return;
        }
        handle_signals(job);
    }
}

int main(int argc, char **argv)
{
    struct job job = { .sfd = -1, .status = -1 };
    struct sigaction ignore = { .sa_handler = SIG_IGN }, old_sigpipe;
    sigset_t forwarded, old_mask;
    char token_hex[WEFTRUN_TOKEN_HEX + 1];
    const char *token;
    struct weftrun_port_store store;
    struct weftrun_port fport = { .hold_fd = -1 };
    weft__store_server_t *srv = NULL;
    struct weftrun_env env;
    struct weftrun_bind_plan bind;
    int status = 1, early_exit;

    switch (weftrun_parse_args(argc, argv, &job.opts)) {
    case WEFTRUN_ARGS_RUN:
        break;
    case WEFTRUN_ARGS_DONE:
        return 0;
    case WEFTRUN_ARGS_BAD:
        return WEFTRUN_EXIT_USAGE;
    }

    /* Blocked before the store's thread exists, so that it inherits the
     * mask and these signals reach only the signalfd. */
    sigemptyset(&forwarded);
    sigaddset(&forwarded, SIGINT);
    sigaddset(&forwarded, SIGTERM);
    sigaddset(&forwarded, SIGHUP);
    sigaddset(&forwarded, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &forwarded, &old_mask) != 0) {
        fprintf(stderr, "weftrun: sigprocmask: %s\n", strerror(errno));
        goto out;
    }
    job.sfd = signalfd(-1, &forwarded, SFD_NONBLOCK | SFD_CLOEXEC);
    if (job.sfd < 0) {
        fprintf(stderr, "weftrun: signalfd: %s\n", strerror(errno));
        goto out;
    }
    /* A closed reader of weftrun's output must not kill the launcher (and
     * leave the ranks unsupervised); the ranks get the old action back. */
    sigaction(SIGPIPE, &ignore, &old_sigpipe);
    /* What a rank leaves behind comes to weftrun, not to init, when the
     * rank exits; see stop_leftovers. Without it (old kernels) init reaps
     * them, which only makes stopping them slower. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);

    /* From here --timeout counts: the other nodes' wait for node 0 too. */
    if (job.opts.timeout_s > 0) {
        job.timeout_pending = 1;
        job.timeout_at = now_ms() + seconds_to_ms(job.opts.timeout_s);
    }
    token = job_token(&job, token_hex);
    if (token == NULL)
        goto out_close_sfd;
    if (weftrun_port_begin(&fport, &job.opts) != 0) {
        status = WEFTRUN_EXIT_USAGE;
        goto out_close_sfd;
    }
    if (host_store(&job, token, &store, &srv) != 0)
        goto out_release_port;
    early_exit = framework_port(&job, &fport, &store);
    if (early_exit >= 0) {
        status = early_exit;
        goto out_stop_store;
    }

    {
        struct weftrun_env_job ej = {
            .world_size = job.opts.nnodes * job.opts.nproc,
            .local_world_size = job.opts.nproc,
            .group_rank = job.opts.node_rank,
            .group_world_size = job.opts.nnodes,
            .master_addr = store.addr,
            .store_port = store.port,
            .framework_port = fport.port,
            .token = token,
            .job_name = job.opts.job_name,
        };

        if (weftrun_env_init(&env, &ej) != 0) {
            fprintf(stderr, "weftrun: cannot build the ranks' environment: %s\n",
                    strerror(errno));
            goto out_stop_store;
        }
    }
    job.procs = calloc((size_t)job.opts.nproc, sizeof(*job.procs));
    job.pfds = calloc((size_t)job.opts.nproc * 2 + 1, sizeof(*job.pfds));
    job.pfd_tags = calloc((size_t)job.opts.nproc * 2 + 1, sizeof(*job.pfd_tags));
    if (job.procs == NULL || job.pfds == NULL || job.pfd_tags == NULL) {
        fprintf(stderr, "weftrun: out of memory for %d ranks\n", job.opts.nproc);
        goto out_free;
    }

    if (weftrun_bind_plan(&bind, job.opts.bind_to, job.opts.nproc) != 0)
        goto out_free;
    weftrun_port_release(&fport);
    start_ranks(&job, &env, &bind, &old_mask, &old_sigpipe);
    weftrun_bind_fini(&bind);
    weftrun_env_fini(&env);
    supervise(&job);
    if (job.opts.tag_output) {
        for (int i = 0; i < job.nstarted; i++) {
            weftrun_tag_finish(&job.procs[i].out);
            weftrun_tag_finish(&job.procs[i].err);
        }
    }
    stop_leftovers(&job);
    /* Every rank of this node is gone: what the killed ones left in
     * /dev/shm (their doorbells, segments they mapped first) goes now
     * rather than at a later job's sweep. */
    if (srv)
        weft__shm_sweep_job(weft__store_server_job_id(srv));

    if (job.status >= 0)
        status = job.status;
    else if (job.signal_received != 0)
        status = 128 + job.signal_received;
    else
        status = 0;
    goto out_free_arrays;

out_free:
    weftrun_env_fini(&env);
out_free_arrays:
    free(job.pfd_tags);
    free(job.pfds);
    free(job.procs);
out_stop_store:
    weft__store_server_stop(srv);
out_release_port:
    weftrun_port_release(&fport);
out_close_sfd:
    close(job.sfd);
out:
    return status;
}
