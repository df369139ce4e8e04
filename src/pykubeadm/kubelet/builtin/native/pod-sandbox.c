/*
 * pod-sandbox: start one container process in its own mount, PID and UTS namespaces (the built-in runtime's runc).
 *
 *   pod-sandbox [-p] [-h HOSTNAME] [-w WORKDIR] [-z SOCKET] [-n NETNS] [-b SRC DST]... [-r SRC DST]... -- PROGRAM [ARG]...
 *
 * With -n the launcher first joins the network namespace pinned at NETNS (the Pod's, made and attached through CNI by
 * the kubelet), so the program and everything entering the launcher's namespaces use the Pod's network.
 *
 * The launcher unshares mount+PID+UTS, makes every mount private (nothing propagates to the host), bind-mounts each
 * SRC at DST in the order given (-r: read-only), sets the hostname, and forks the program as PID 1 of the new PID
 * namespace with a fresh /proc, in WORKDIR (default /). It stays as the program's parent, forwards termination signals to it and
 * exits with its status (128+N when killed by signal N), so the caller sees one process per container.
 *
 * A DST that does not exist is created inside the namespace only: the deepest existing ancestor directory is covered
 * with an overlay (the directory itself as the lower layer, a private tmpfs as the upper), the mounts below it are
 * re-attached from clones, and the missing directories (or an empty file for a file SRC) are made in the overlay.
 * When that ancestor is "/", the overlay becomes the new root (pivot_root). Inside a DST already mounted here the
 * missing entries are created in the volume, as container runtimes do. With -p the whole root is such an overlay from
 * the start (a private writable layer: the program's writes outside its volumes and the host's other mounts stay in
 * the namespace, in memory).
 *
 * With -z the program (a `python -m pykubeadm component ...` the lab's zygote has imported) is forked by the pykubeadm
 * zygote listening at SOCKET instead of exec'd: the launcher connects and sends one JSON line {"container": {"argv",
 * "cgroups", "env", "cwd"}} (cgroups: the -C files, which the program joins before anything else) before it unshares, and its stdin, stdout and stderr (SCM_RIGHTS) once its mount and UTS namespaces
 * are set up. The zygote's child then enters the launcher's namespaces, root and working directory, unshares a PID
 * namespace and forks the program as its PID 1; it answers "pid N" (the program's pid here) and, when the program has
 * ended, "exit STATUS" (a wait status). The launcher joins that PID namespace for its children (so that nsenter finds
 * it as with an exec'd program), forwards signals to the program and exits with its status; it kills the program if
 * the zygote's child is gone first, and the zygote's child kills it when the launcher is. If the zygote cannot be
 * reached or answers no pid within ZYGOTE_PID_TIMEOUT seconds, the launcher unshares the PID namespace, forks and
 * execs the program itself.
 *
 * Confinement (what a Pod's securityContext and resources ask for; the kubelet decides, the launcher applies):
 *   -l DIR   the container's own root: the host's root as the read-only lower layer of an overlay whose upper layer
 *            is DIR/upper (work dir DIR/work), kept on disk across restarts of the container; implies the hardening
 *            below. -o instead: a read-only root (mount points for volumes are made in a private layer in memory,
 *            then the root is remounted read-only: EROFS outside volumes).
 *            Hardening: the host's other mounts are carried read-only; /dev is a fresh tmpfs with the standard
 *            devices, a private devpts and /dev/shm; /proc has runc's masked and read-only paths (not with -M,
 *            procMount Unmasked). -P (privileged) keeps the host's /dev and a writable /sys, masks nothing.
 *   -u UID -g GID -G GID,GID...   the identity the program runs as (supplementary groups replace the launcher's).
 *   -c MASK  the capabilities (hex bit mask) left in the bounding, permitted, effective and inheritable sets.
 *   -N       no_new_privs (allowPrivilegeEscalation: false).   -S  the default seccomp filter (RuntimeDefault).
 *   -C FILE  a cgroup.procs file the program is moved into just before exec (repeatable: one per cgroup v1
 *            hierarchy), so it and all it starts are charged to the container's cgroup; the launcher's own setup is
 *            not (a BestEffort container's 2 CPU shares would starve it on a busy node).
 *   -e PID   instead of starting a container, enter the one launched as PID (its mount, UTS and PID namespaces, its
 *            root and working directory, the cgroups given with -C) and run the program there with the identity,
 *            capabilities, no_new_privs and seccomp filter given (kubectl exec, exec probes).
 *   -V       print the features built in ("seccomp") and exit.
 * Identity is applied last, in the program's process just before exec: seccomp (while still privileged), then
 * no_new_privs, the bounding set, groups, gid, uid (keeping capabilities), the capability sets. Namespaces to join
 * or make are gathered in `struct confine` too, so another one (a network namespace by path) is one more field.
 * Written for pykubeadm (pykubeadm.kubelet.builtin.sandbox); built by scripts/setup.sh or on first use.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <sys/sysmacros.h>
#include <grp.h>
#include <linux/capability.h>
#include <unistd.h>
#ifdef HAVE_SECCOMP
#include <seccomp.h>
#endif

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif
#define ATTR_RDONLY 0x00000001 /* MOUNT_ATTR_RDONLY: <linux/mount.h> clashes with <sys/mount.h> */

struct attr { /* struct mount_attr */
    unsigned long long attr_set, attr_clr, propagation, userns_fd;
};

#define MAX_MOUNTS 256
#define EXIT_SETUP 127

struct bind {
    const char *src, *dst;
    int ro;
    int fd;     /* a detached clone of src, taken before any overlay changes what paths resolve to */
    int is_dir;
};

static const char *scratch = "/proc"; /* mount point of the private tmpfs holding overlay upper dirs */
static int scratch_mounted;
static int scratch_seq;
static int proc_fd = -1; /* the host /proc, for mountinfo once /proc is covered */
static char *covered[MAX_MOUNTS * 2];
static int ncovered;
static pid_t child_pid;
static volatile pid_t forked_pid; /* the program, when the zygote forked it (-z) */

#define MAX_CGROUPS 16
#define MAX_GROUPS 64

/* What the container is confined by (see the header); all off by default. */
struct confine {
    const char *layer;    /* -l: the writable layer's directory */
    int root_ro;          /* -o */
    int harden;           /* -l or -o: the host's mounts read-only, a fresh /dev, masked /proc */
    int privileged;       /* -P */
    int unmasked;         /* -M */
    int nnp;              /* -N */
    int seccomp;          /* -S */
    int set_caps;         /* -c */
    unsigned long long caps;
    int set_uid, set_gid, set_groups;
    uid_t uid;
    gid_t gid;
    gid_t groups[MAX_GROUPS];
    int ngroups;
    const char *cgroups[MAX_CGROUPS]; /* -C */
    int ncgroups;
    pid_t enter;          /* -e */
};
static struct confine cf;

static void fail(const char *what, const char *path) {
    fprintf(stderr, "pod-sandbox: %s %s: %s\n", what, path ? path : "", strerror(errno));
    exit(EXIT_SETUP);
}

static int is_under(const char *path, const char *dir) {
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0) return 1;
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static void add_covered(const char *path) {
    char real[PATH_MAX];
    if (realpath(path, real) && ncovered < (int)(sizeof covered / sizeof covered[0])) covered[ncovered++] = strdup(real);
}

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s) {
    char *out = s;
    for (char *in = s; *in; in++) {
        if (in[0] == '\\' && in[1] >= '0' && in[1] <= '7' && in[2] && in[3]) {
            *out++ = (char)(((in[1] - '0') << 6) | ((in[2] - '0') << 3) | (in[3] - '0'));
            in += 3;
        } else {
            *out++ = *in;
        }
    }
    *out = '\0';
}

/* Mount points strictly below `dir`, outermost only (a recursive clone carries the ones inside them). */
static int submounts(const char *dir, char **out, int max) {
    int fd = openat(proc_fd, "self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("open", "/proc/self/mountinfo");
    FILE *f = fdopen(fd, "r");
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (getline(&line, &cap, f) > 0) {
        char *save = NULL, *field = strtok_r(line, " ", &save);
        for (int i = 0; field && i < 4; i++) field = strtok_r(NULL, " ", &save);
        if (!field) continue;
        unescape(field);
        if (strcmp(field, dir) == 0 || !is_under(field, dir)) continue;
        int skip = 0;
        for (int i = 0; i < n && !skip; i++) {
            if (is_under(field, out[i])) skip = 1;
        }
        if (skip) continue;
        for (int i = 0; i < n;) { /* drop entries inside this one */
            if (is_under(out[i], field)) {
                free(out[i]);
                out[i] = out[--n];
            } else {
                i++;
            }
        }
        if (n < max) out[n++] = strdup(field);
    }
    free(line);
    fclose(f);
    return n;
}

static void mount_scratch(void) {
    if (scratch_mounted) return;
    if (mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") < 0) fail("mount tmpfs on", scratch);
    scratch_mounted = 1;
}

/* Hardening: whether the host's mount at `path` (a detached clone `fd`) is carried into the container, and how: /proc
 * stays (a fresh one is mounted over it), /dev only when privileged (else a fresh one is made), /sys writable only
 * when privileged, everything else read-only. */
static int host_mount_kept(const char *path, int fd) {
    if (strcmp(path, "/proc") == 0) return 1;
    if (is_under(path, "/dev") && !cf.privileged) return 0;
    if (is_under(path, "/dev") || (is_under(path, "/sys") && cf.privileged)) return 1;
    struct attr a = {.attr_set = ATTR_RDONLY};
    if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) < 0) fail("read-only", path);
    return 1;
}

/* Cover directory `dir` with an overlay whose upper layer is private, keeping the mounts below it. */
static void overlay(const char *dir) {
    char *subs[MAX_MOUNTS];
    int fds[MAX_MOUNTS];
    int n = submounts(dir, subs, MAX_MOUNTS);
    for (int i = 0; i < n; i++) {
        fds[i] = (int)syscall(SYS_open_tree, AT_FDCWD, subs[i], OPEN_TREE_CLONE | O_CLOEXEC | AT_RECURSIVE);
    }
    mount_scratch();
    int seq = ++scratch_seq;
    int new_root = strcmp(dir, "/") == 0;
    char upper[PATH_MAX], work[PATH_MAX], root[64], opts[3 * PATH_MAX + 64], target[PATH_MAX];
    if (new_root && cf.layer) { /* the container's writable layer, on disk: kept across its restarts */
        snprintf(upper, sizeof upper, "%s/upper", cf.layer);
        snprintf(work, sizeof work, "%s/work", cf.layer);
    } else {
        snprintf(upper, sizeof upper, "%s/u%d", scratch, seq);
        snprintf(work, sizeof work, "%s/w%d", scratch, seq);
    }
    snprintf(root, sizeof root, "%s/r%d", scratch, seq);
    if ((mkdir(upper, 0755) < 0 && errno != EEXIST) || (mkdir(work, 0700) < 0 && errno != EEXIST)) fail("mkdir", upper);
    if (strchr(dir, ',') || strchr(dir, ':') || strchr(upper, ',') || strchr(upper, ':')) {
        errno = EINVAL;
        fail("cannot overlay a path with ',' or ':'", strchr(dir, ',') || strchr(dir, ':') ? dir : upper);
    }
    snprintf(opts, sizeof opts, "lowerdir=%s,upperdir=%s,workdir=%s", dir, upper, work);
    const char *at = dir;
    if (new_root) {
        if (mkdir(root, 0755) < 0) fail("mkdir", root);
        at = root;
    }
    if (mount("overlay", at, "overlay", 0, opts) < 0) fail("mount overlay on", dir);
    for (int i = 0; i < n; i++) {
        if (fds[i] >= 0 && new_root && cf.harden && !host_mount_kept(subs[i], fds[i])) {
            close(fds[i]);
            fds[i] = -1;
        }
        if (fds[i] >= 0) {
            snprintf(target, sizeof target, "%s%s", new_root ? root : "", subs[i]);
            if (syscall(SYS_move_mount, fds[i], "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
                fail("re-attach mount", subs[i]);
            }
            close(fds[i]);
        }
        free(subs[i]);
    }
    if (new_root) {
        if (chdir(root) < 0) fail("chdir", root);
        if (syscall(SYS_pivot_root, ".", ".") < 0) fail("pivot_root", root);
        if (umount2(".", MNT_DETACH) < 0) fail("detach old root", "/");
        if (chdir("/") < 0) fail("chdir", "/");
        scratch_mounted = 0; /* it went with the old root; the overlay keeps its upper dir alive */
        for (int i = 0; i < ncovered; i++) free(covered[i]);
        ncovered = 0;
    }
    add_covered(new_root ? "/" : dir);
}

static void make_missing(const char *path, int want_dir) {
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST) fail("mkdir", buf);
        *p = '/';
    }
    if (want_dir) {
        if (mkdir(buf, 0755) < 0 && errno != EEXIST) fail("mkdir", buf);
    } else {
        int fd = open(buf, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0) fail("create", buf);
        close(fd);
    }
}

/* Make `path` exist inside this mount namespace only. */
static void ensure_target(const char *path, int want_dir) {
    struct stat st;
    if (stat(path, &st) == 0) return;
    char anc[PATH_MAX], real[PATH_MAX];
    snprintf(anc, sizeof anc, "%s", path);
    for (;;) {
        char *slash = strrchr(anc, '/');
        if (!slash) break;
        if (slash == anc) {
            anc[1] = '\0';
            break;
        }
        *slash = '\0';
        if (stat(anc, &st) == 0) break;
    }
    if (!realpath(anc, real)) fail("resolve", anc);
    int inside = 0;
    for (int i = 0; i < ncovered && !inside; i++) inside = is_under(real, covered[i]);
    if (!inside) {
        if (is_under(real, scratch) && strcmp(real, "/") != 0) {
            errno = EINVAL;
            fail("cannot create a mount point under", scratch);
        }
        overlay(real);
    }
    make_missing(path, want_dir);
}

/* Capture every source as it is on the host: after "/" is overlaid, a path would resolve into the overlay. */
static void clone_source(struct bind *b) {
    struct stat st;
    b->fd = (int)syscall(SYS_open_tree, AT_FDCWD, b->src, OPEN_TREE_CLONE | O_CLOEXEC | AT_RECURSIVE);
    if (b->fd < 0) fail("open", b->src);
    if (fstat(b->fd, &st) < 0) fail("stat", b->src);
    b->is_dir = S_ISDIR(st.st_mode);
}

static void bind_mount(const struct bind *b) {
    ensure_target(b->dst, b->is_dir);
    if (syscall(SYS_move_mount, b->fd, "", AT_FDCWD, b->dst, MOVE_MOUNT_F_EMPTY_PATH) < 0) fail("bind-mount", b->dst);
    close(b->fd);
    if (b->ro) {
        struct statvfs vfs;
        unsigned long keep = 0;
        if (statvfs(b->dst, &vfs) == 0) {
            keep = vfs.f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_RELATIME);
        }
        if (mount(NULL, b->dst, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | keep, NULL) < 0) fail("remount ro", b->dst);
    }
    add_covered(b->dst);
}

/* A fresh /dev (hardening, not privileged): a tmpfs with the devices runc gives every container, a private devpts
 * instance, /dev/shm, and the /proc/self/fd links. The host's other devices are not there. */
static void make_dev(void) {
    static const struct {
        const char *name;
        unsigned maj, min;
    } devs[] = {{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};
    if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_STRICTATIME, "mode=755,size=65536k") < 0) fail("mount", "/dev");
    mode_t old = umask(0);
    char path[64];
    for (unsigned i = 0; i < sizeof devs / sizeof devs[0]; i++) {
        snprintf(path, sizeof path, "/dev/%s", devs[i].name);
        if (mknod(path, S_IFCHR | 0666, makedev(devs[i].maj, devs[i].min)) < 0) fail("mknod", path);
    }
    if (mkdir("/dev/pts", 0755) < 0 || mkdir("/dev/shm", 01777) < 0) fail("mkdir", "/dev/pts");
    if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620,gid=5") < 0) {
        fail("mount", "/dev/pts");
    }
    if (mount("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=65536k") < 0) {
        fail("mount", "/dev/shm");
    }
    umask(old);
    const char *links[][2] = {{"pts/ptmx", "/dev/ptmx"},     {"/proc/self/fd", "/dev/fd"},
                              {"/proc/self/fd/0", "/dev/stdin"}, {"/proc/self/fd/1", "/dev/stdout"},
                              {"/proc/self/fd/2", "/dev/stderr"}};
    for (unsigned i = 0; i < sizeof links / sizeof links[0]; i++) {
        if (symlink(links[i][0], links[i][1]) < 0) fail("symlink", links[i][1]);
    }
    add_covered("/dev");
}

/* runc's default masked and read-only paths over a fresh /proc (procMount: Default). */
static void mask_proc(void) {
    static const char *masked[] = {"/proc/acpi",       "/proc/asound",      "/proc/kcore",  "/proc/keys",
                                   "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                                   "/proc/sched_debug", "/proc/scsi",        "/sys/firmware", "/sys/devices/virtual/powercap"};
    static const char *readonly[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"};
    struct stat st;
    for (unsigned i = 0; i < sizeof masked / sizeof masked[0]; i++) {
        if (stat(masked[i], &st) < 0) continue;
        int rc = S_ISDIR(st.st_mode) ? mount("tmpfs", masked[i], "tmpfs", MS_RDONLY, "size=0")
                                     : mount("/dev/null", masked[i], NULL, MS_BIND, NULL);
        if (rc < 0) fail("mask", masked[i]);
    }
    for (unsigned i = 0; i < sizeof readonly / sizeof readonly[0]; i++) {
        if (stat(readonly[i], &st) < 0) continue;
        if (mount(readonly[i], readonly[i], NULL, MS_BIND | MS_REC, NULL) < 0 ||
            mount(NULL, readonly[i], NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
            fail("read-only", readonly[i]);
        }
    }
}

static int cgroup_fds[MAX_CGROUPS];

/* Open the container's cgroup.procs files while the host's /sys is still writable here (before the new root). */
static void open_cgroups(void) {
    for (int i = 0; i < cf.ncgroups; i++) {
        if ((cgroup_fds[i] = open(cf.cgroups[i], O_WRONLY | O_CLOEXEC)) < 0) fail("open", cf.cgroups[i]);
    }
}

/* Move this process into the container's cgroups (its children follow). */
static void join_cgroups(void) {
    for (int i = 0; i < cf.ncgroups; i++) {
        if (write(cgroup_fds[i], "0", 1) != 1) fail("join cgroup", cf.cgroups[i]);
        close(cgroup_fds[i]);
    }
}

#ifdef HAVE_SECCOMP
/* The RuntimeDefault profile: everything allowed but what lets a container reach past itself (the kernel's keyring,
 * modules, clocks, mounts and namespaces, other processes' memory, BPF, perf, reboot and swap), which fails EPERM;
 * the same calls containerd's default profile leaves out. */
static void load_seccomp(void) {
    static const char *denied[] = {
        "acct",          "add_key",        "bpf",          "clock_adjtime", "clock_settime",  "create_module",
        "delete_module", "finit_module",   "fsconfig",     "fsmount",       "fsopen",         "fspick",
        "get_kernel_syms", "init_module",  "ioperm",       "iopl",          "kcmp",           "kexec_file_load",
        "kexec_load",    "keyctl",         "lookup_dcookie", "mount",       "mount_setattr",  "move_mount",
        "name_to_handle_at", "nfsservctl", "open_by_handle_at", "open_tree", "perf_event_open", "pivot_root",
        "process_vm_readv", "process_vm_writev", "query_module", "quotactl", "reboot",        "request_key",
        "setns",         "settimeofday",   "stime",        "swapoff",       "swapon",         "sysfs",
        "_sysctl",       "umount",         "umount2",      "unshare",       "uselib",         "userfaultfd",
        "ustat",         "vm86",           "vm86old",
    };
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) fail("seccomp", "init");
    for (unsigned i = 0; i < sizeof denied / sizeof denied[0]; i++) {
        int nr = seccomp_syscall_resolve_name(denied[i]);
        if (nr != __NR_SCMP_ERROR && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0) < 0) {
            fail("seccomp rule", denied[i]);
        }
    }
    int rc = seccomp_load(ctx);
    seccomp_release(ctx);
    if (rc < 0) {
        errno = -rc;
        fail("seccomp", "load");
    }
}
#else
static void load_seccomp(void) {
    errno = ENOSYS;
    fail("seccomp", "(built without libseccomp)");
}
#endif

/* The program's identity and privileges, in its own process just before exec. */
static void apply_identity(void) {
    if (cf.seccomp) load_seccomp(); /* first: without no_new_privs only a privileged process may */
    if (cf.nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) fail("no_new_privs", "");
    if (cf.set_caps) {
        for (int c = 0; c <= CAP_LAST_CAP; c++) {
            if (!(cf.caps & (1ULL << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL) {
                fail("drop capability", "");
            }
        }
    }
    if ((cf.set_groups || cf.set_uid || cf.set_gid) && setgroups(cf.ngroups, cf.groups) < 0) fail("setgroups", "");
    if (cf.set_gid && setresgid(cf.gid, cf.gid, cf.gid) < 0) fail("setgid", "");
    if (cf.set_uid) {
        if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || setresuid(cf.uid, cf.uid, cf.uid) < 0) fail("setuid", "");
    }
    if (cf.set_caps) {
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct d[2];
        if (syscall(SYS_capget, &h, d) < 0) fail("capget", "");
        for (int k = 0; k < 2; k++) { /* never more than the launcher holds (all it may give: privileged) */
            __u32 part = (__u32)(cf.caps >> (32 * k)) & d[k].permitted;
            d[k].effective = d[k].permitted = d[k].inheritable = part;
        }
        if (syscall(SYS_capset, &h, d) < 0) fail("capset", "");
    }
}

/* -e PID: run the program inside the container launched as PID (its UTS, network, PID and mount namespaces, root and
   working directory), confined as it is. */
static int enter(char **prog) {
    char path[64];
    const char *names[] = {"uts", "net", "pid_for_children", "mnt"};
    int types[] = {CLONE_NEWUTS, CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWNS}, fds[4];
    open_cgroups();
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)cf.enter, names[i]);
        /* pid_for_children is ENOENT until the container's PID 1 exists: a launcher just started is still mounting */
        for (int tries = 0; (fds[i] = open(path, O_RDONLY | O_CLOEXEC)) < 0 && errno == ENOENT && tries < 500; tries++) {
            if (kill(cf.enter, 0) < 0) break;
            usleep(10000);
        }
        if (fds[i] < 0) fail("open", path);
    }
    snprintf(path, sizeof path, "/proc/%d/root", (int)cf.enter);
    int root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    snprintf(path, sizeof path, "/proc/%d/cwd", (int)cf.enter);
    int cwd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0 || cwd < 0) fail("open", path);
    for (int i = 0; i < 4; i++) {
        if (setns(fds[i], types[i]) < 0) fail("setns", names[i]);
        close(fds[i]);
    }
    if (fchdir(root) < 0 || chroot(".") < 0 || fchdir(cwd) < 0) fail("enter root of", "container");
    child_pid = fork();
    if (child_pid < 0) fail("fork", "");
    if (child_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        join_cgroups();
        apply_identity();
        execvp(prog[0], prog);
        fprintf(stderr, "pod-sandbox: exec: \"%s\": %s\n", prog[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    return -1; /* the caller forwards signals and waits */
}

static int parse_id(const char *s, unsigned long *out) {
    char *end;
    errno = 0;
    *out = strtoul(s, &end, 10);
    return errno == 0 && *s && !*end && *out < 0xffffffffUL;
}

static void parse_groups(const char *list) {
    char buf[4096], *save = NULL;
    unsigned long id;
    snprintf(buf, sizeof buf, "%s", list);
    cf.set_groups = 1;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (cf.ngroups >= MAX_GROUPS || !parse_id(t, &id)) {
            errno = EINVAL;
            fail("bad group list", list);
        }
        cf.groups[cf.ngroups++] = (gid_t)id;
    }
}

static void forward(int sig) {
    if (forked_pid > 0) kill(forked_pid, sig);
    else if (child_pid > 0) kill(child_pid, sig);
}

/* A connection to the zygote's socket, or -1 (then the program is exec'd). */
static int zygote_connect(const char *path) {
    struct sockaddr_un addr;
    if (strlen(path) >= sizeof addr.sun_path) return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, path);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* `s` as a JSON string. */
static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
        else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
        else fputc(*c, f);
    }
    fputc('"', f);
}

static int send_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL); /* a closed zygote is an error, not a SIGPIPE */
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Ask the zygote to fork `prog` in our namespaces: the request line, sent as soon as we are connected (the zygote
 * reads it and goes on; its child waits for our stdio). */
static int zygote_request(int fd, char **prog, const char *cwd) {
    extern char **environ;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return -1;
    fputs("{\"container\": {\"cwd\": ", f);
    json_string(f, cwd);
    fputs(", \"argv\": [", f);
    for (char **a = prog; *a; a++) {
        if (a != prog) fputs(", ", f);
        json_string(f, *a);
    }
    fputs("], \"cgroups\": [", f); /* the program joins them first: its limits hold as for an exec'd one */
    for (int k = 0; k < cf.ncgroups; k++) {
        if (k) fputs(", ", f);
        json_string(f, cf.cgroups[k]);
    }
    fputs("], \"env\": {", f);
    int first = 1;
    for (char **e = environ; *e; e++) {
        char *eq = strchr(*e, '=');
        if (!eq) continue;
        *eq = '\0';
        if (!first) fputs(", ", f);
        json_string(f, *e);
        fputs(": ", f);
        json_string(f, eq + 1);
        *eq = '=';
        first = 0;
    }
    fputs("}}}\n", f);
    fclose(f);
    int rc = send_all(fd, buf, len);
    free(buf);
    return rc;
}

/* Our stdin, stdout and stderr to the zygote's child, once our namespaces are ready: it enters them then. */
static int zygote_stdio(int fd) {
    char one = 'F';
    struct iovec iov = {.iov_base = &one, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(3 * sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(3 * sizeof(int));
    int fds[3] = {0, 1, 2};
    memcpy(CMSG_DATA(c), fds, sizeof fds);
    while (sendmsg(fd, &msg, MSG_NOSIGNAL) < 0) {
        if (errno != EINTR) return -1;
    }
    return 0;
}

/* How long the launcher waits for the zygote's "pid" line before it execs the program itself: the zygote serves one
 * request at a time and may be importing. Its child kills a program it forks once we have hung up. */
#define ZYGOTE_PID_TIMEOUT 10

/* The next line from the zygote ("pid N", "exit S") into `line`; 0 at EOF or on an error. A signal interrupts the
 * read only to be forwarded (SA_RESTART is not set: the loop reads on). */
static int zygote_line(int fd, char *line, size_t max) {
    size_t n = 0;
    while (n + 1 < max) {
        ssize_t r = read(fd, line + n, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        if (line[n] == '\n') {
            line[n] = '\0';
            return 1;
        }
        n++;
    }
    return 0;
}

/* -n: join the Pod's network namespace (a bind-mounted nsfs file). */
static void join_netns(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("open network namespace", path);
    if (setns(fd, CLONE_NEWNET) < 0) fail("join network namespace", path);
    close(fd);
}

static void usage(void) {
    fprintf(stderr, "usage: pod-sandbox [-p|-l LAYER|-o] [-P] [-M] [-u UID] [-g GID] [-G GIDS] [-c CAPS] [-N] [-S] "
                    "[-C CGROUP.PROCS]... [-h HOSTNAME] [-w WORKDIR] [-z SOCKET] [-n NETNS] [-e PID] "
                    "[-b|-r SRC DST]... -- PROGRAM [ARG]...\n       pod-sandbox -V\n");
    exit(2);
}

/* One option of the confinement (see the header); 0 when `opt` is not one. */
static int parse_confine(int argc, char **argv, int *i) {
    const char *o = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    unsigned long id;
    if (strcmp(o, "-o") == 0) return cf.root_ro = cf.harden = 1;
    if (strcmp(o, "-P") == 0) return cf.privileged = 1;
    if (strcmp(o, "-M") == 0) return cf.unmasked = 1;
    if (strcmp(o, "-N") == 0) return cf.nnp = 1;
    if (strcmp(o, "-S") == 0) return cf.seccomp = 1;
    if (!v) return 0;
    if (strcmp(o, "-l") == 0) {
        cf.layer = v;
        cf.harden = 1;
    } else if (strcmp(o, "-u") == 0 && parse_id(v, &id)) {
        cf.uid = (uid_t)id;
        cf.set_uid = 1;
    } else if (strcmp(o, "-g") == 0 && parse_id(v, &id)) {
        cf.gid = (gid_t)id;
        cf.set_gid = 1;
    } else if (strcmp(o, "-G") == 0) {
        parse_groups(v);
    } else if (strcmp(o, "-c") == 0) {
        char *end;
        cf.caps = strtoull(v, &end, 16);
        if (*end || !*v) return 0;
        cf.set_caps = 1;
    } else if (strcmp(o, "-C") == 0 && cf.ncgroups < MAX_CGROUPS) {
        cf.cgroups[cf.ncgroups++] = v;
    } else if (strcmp(o, "-e") == 0 && parse_id(v, &id) && id > 0) {
        cf.enter = (pid_t)id;
    } else {
        return 0;
    }
    (*i)++;
    return 1;
}

int main(int argc, char **argv) {
    static struct bind binds[MAX_MOUNTS];
    int nbinds = 0, i = 1, private_root = 0;
    const char *hostname = NULL, *workdir = NULL, *zygote = NULL, *netns = NULL;
    if (argc == 2 && strcmp(argv[1], "-V") == 0) {
#ifdef HAVE_SECCOMP
        puts("seccomp");
#endif
        return 0;
    }
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if (strcmp(argv[i], "-p") == 0) {
            private_root = 1;
        } else if (strcmp(argv[i], "-h") == 0 && i + 1 < argc) {
            hostname = argv[++i];
        } else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc) {
            workdir = argv[++i];
        } else if (strcmp(argv[i], "-z") == 0 && i + 1 < argc) {
            zygote = argv[++i];
        } else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            netns = argv[++i];
        } else if ((strcmp(argv[i], "-b") == 0 || strcmp(argv[i], "-r") == 0) && i + 2 < argc && nbinds < MAX_MOUNTS) {
            binds[nbinds].ro = argv[i][1] == 'r';
            binds[nbinds].src = argv[i + 1];
            binds[nbinds].dst = argv[i + 2];
            if (binds[nbinds].dst[0] != '/') usage();
            nbinds++;
            i += 2;
        } else if (!parse_confine(argc, argv, &i)) {
            usage();
        }
    }
    if (i >= argc) usage();
    char **prog = argv + i;
    sigset_t all, old;
    sigfillset(&all);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward;
    int fwd[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
    if (cf.enter) {
        sigprocmask(SIG_BLOCK, &all, &old);
        enter(prog);
        zygote = NULL;
        goto wait_program;
    }
    if (netns) join_netns(netns);
    open_cgroups();
    int zfd = zygote ? zygote_connect(zygote) : -1; /* before the mounts change what the path resolves to */
    if (zfd >= 0 && zygote_request(zfd, prog, workdir ? workdir : "/") < 0) {
        close(zfd);
        zfd = -1;
    }

    /* with a zygote, the PID namespace is the one it makes for the program (joined below), else ours */
    if (unshare(CLONE_NEWNS | CLONE_NEWUTS | (zfd >= 0 ? 0 : CLONE_NEWPID)) < 0) fail("unshare", "mount+pid+uts");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) fail("make private", "/");
    proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (proc_fd < 0) fail("open", "/proc");
    if (hostname && sethostname(hostname, strlen(hostname)) < 0) fail("sethostname", hostname);
    for (int k = 0; k < nbinds; k++) clone_source(&binds[k]);
    if (private_root || cf.harden) overlay("/");
    if (cf.harden && !cf.privileged) make_dev();
    for (int k = 0; k < nbinds; k++) bind_mount(&binds[k]);
    if (workdir) ensure_target(workdir, 1);
    if (scratch_mounted && umount2(scratch, MNT_DETACH) < 0) fail("detach", scratch);
    if (cf.root_ro && mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0) fail("remount ro", "/");
    if (chdir(workdir ? workdir : "/") < 0) fail("chdir", workdir ? workdir : "/");

    sigprocmask(SIG_BLOCK, &all, &old);
    if (zfd >= 0) {
        char line[64];
        long pid = 0;
        struct timeval wait = {.tv_sec = ZYGOTE_PID_TIMEOUT}, forever = {0};
        setsockopt(zfd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
        if (zygote_stdio(zfd) == 0 && zygote_line(zfd, line, sizeof line) && sscanf(line, "pid %ld", &pid) == 1 &&
            pid > 0) {
            setsockopt(zfd, SOL_SOCKET, SO_RCVTIMEO, &forever, sizeof forever);
            forked_pid = (pid_t)pid;
            char ns[64];
            snprintf(ns, sizeof ns, "%ld/ns/pid", pid);
            int nsfd = openat(proc_fd, ns, O_RDONLY | O_CLOEXEC);
            if (nsfd >= 0) { /* the program's PID namespace becomes our children's: nsenter --pid finds it */
                setns(nsfd, CLONE_NEWPID);
                close(nsfd);
            }
            for (unsigned k = 0; k < sizeof fwd / sizeof fwd[0]; k++) sigaction(fwd[k], &sa, NULL);
            sigprocmask(SIG_SETMASK, &old, NULL);
            int status = SIGKILL; /* the zygote's child gone without a status: the program is killed */
            if (!zygote_line(zfd, line, sizeof line) || sscanf(line, "exit %d", &status) != 1) {
                kill(forked_pid, SIGKILL);
                /* gone (or a zombie its parent reaps) before a restarted container would want its ports */
                for (int i = 0; i < 500 && kill(forked_pid, 0) == 0; i++) usleep(10000);
            }
            if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
            return WEXITSTATUS(status);
        }
        close(zfd); /* no zygote to fork it: exec'd below, in a PID namespace of our own */
        if (unshare(CLONE_NEWPID) < 0) fail("unshare", "pid");
    }
    child_pid = fork();
    if (child_pid < 0) fail("fork", "");
    if (child_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(proc_fd);
        if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) fail("mount", "/proc");
        if (cf.harden && !cf.privileged && !cf.unmasked) mask_proc();
        for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        join_cgroups(); /* the program only: the launcher's setup is not charged to (nor throttled by) its limits */
        apply_identity();
        execvp(prog[0], prog);
        fprintf(stderr, "pod-sandbox: exec: \"%s\": %s\n", prog[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
wait_program:
    for (unsigned k = 0; k < sizeof fwd / sizeof fwd[0]; k++) sigaction(fwd[k], &sa, NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    int status;
    for (;;) {
        pid_t r = waitpid(child_pid, &status, 0);
        if (r == child_pid) break;
        if (r < 0 && errno != EINTR) fail("wait", "");
    }
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
