/* priority-search's decoder as one event loop in C: the loop of
 * optsched/heuristics/_priority_compiled.py, which prepares its arrays, compiles this file
 * on first use and calls priority_run through ctypes. Plain C11, no Python API. It replays
 * the Python decoder (_Decoder in priority_search.py) event by event: the same events, the
 * same choices and tie-breaks, the same floating-point expressions in the same order (compile
 * with -ffp-contract=off so that none is fused), the same work counts. */

#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef int64_t i64;

/* The arrays the driver passes, as (C type, name); priority_fields lists them for the driver,
 * which finds each by its name and checks its type. [a, b) ranges are by *_start offsets. */
#define PRIORITY_ARRAYS(X)                                                                   \
    /* the instance */                                                                       \
    X(double, arrival) X(i64, tasks_per_round) X(i64, rounds)                                \
    X(i64, choice_start) X(i64, choice_class) /* relaxed: each job's eligible classes */     \
    X(double, choice_compute) X(double, choice_pace)                                         \
    X(i64, member_start) X(i64, member_gpu)   /* each class's GPUs */                        \
    X(i64, order_start) X(i64, order_gpu) X(double, order_pace) /* gang: GPUs by pace */    \
    X(i64, thr_start) X(i64, thr_end) X(double, thr_pace)       /* gang: where paces rise */ \
    /* one decode: the priorities in; the previous decode (restart > 0) and this one */     \
    X(double, priority)                                                                      \
    X(i64, before_task) /* tasks x 4: job, round, task, GPU */ X(double, before_start)       \
    X(i64, before_entry) X(i64, before_offset) X(double, before_arena)                       \
    X(i64, task) X(double, start) X(double, completion) X(i64, entry) X(i64, offset)         \
    X(double, arena) X(i64, out) /* status, tasks, events, scanned, checkpoints, gathered */          \
    /* scratch */                                                                            \
    X(double, free) X(double, virt) X(double, heap_t) X(i64, heap_g) X(double, ends)         \
    X(double, wait_t) X(i64, wait_j) X(i64, wait_r)                                          \
    X(double, q_key) X(i64, q_j) X(i64, q_r) X(double, q_ready) X(i64, q_left)               \
    X(double, q_done) X(double, enter_t) X(i64, enter_j) X(i64, enter_r)                    \
    X(double, smallest) X(i64, held) X(i64, chosen) /* gang: n_gpus each */                 \
    X(double, proj) X(i64, proj_copied) /* relaxed, tight: heaps' copies; one flag a class */

/* The sizes, after the arrays (listed as "size name"); restart < 0: from the start. */
#define PRIORITY_SIZES(X)                                                                    \
    X(n_jobs) X(n_gpus) X(n_classes) X(gang) X(reserve) X(tight) X(restart) X(arena_room)   \
    X(check_every) X(has_deadline)

#define AS_MEMBER(type, name) type *name;
#define AS_SIZE(name) i64 name;
typedef struct {
    PRIORITY_ARRAYS(AS_MEMBER)
    PRIORITY_SIZES(AS_SIZE)
    double seconds_left; /* until the deadline, when has_deadline */
} state_t;
#undef AS_MEMBER
#undef AS_SIZE

#define AS_TEXT(type, name) #type " " #name "\n"
#define SIZE_TEXT(name) "size " #name "\n"
const char priority_fields[] = PRIORITY_ARRAYS(AS_TEXT) PRIORITY_SIZES(SIZE_TEXT);

/* why priority_run returned */
enum { DONE = 0, OUT_OF_TIME = 1, GROW = 2 };
/* a checkpoint's head in the arena: moment, tasks, events, scanned, waiting, queued */
enum { HEAD = 6 };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* -- the waiting rounds: a heap of (ready, job, round) ------------------------------------ */

static int wait_less(const state_t *s, i64 a, i64 b) {
    if (s->wait_t[a] != s->wait_t[b]) return s->wait_t[a] < s->wait_t[b];
    if (s->wait_j[a] != s->wait_j[b]) return s->wait_j[a] < s->wait_j[b];
    return s->wait_r[a] < s->wait_r[b];
}

static void wait_swap(state_t *s, i64 a, i64 b) {
    double t = s->wait_t[a];
    i64 j = s->wait_j[a], r = s->wait_r[a];
    s->wait_t[a] = s->wait_t[b], s->wait_j[a] = s->wait_j[b], s->wait_r[a] = s->wait_r[b];
    s->wait_t[b] = t, s->wait_j[b] = j, s->wait_r[b] = r;
}

static void wait_push(state_t *s, i64 *n, double t, i64 j, i64 r) {
    i64 i = (*n)++;
    s->wait_t[i] = t, s->wait_j[i] = j, s->wait_r[i] = r;
    while (i > 0 && wait_less(s, i, (i - 1) / 2)) {
        wait_swap(s, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void wait_pop(state_t *s, i64 *n) {
    i64 i = 0, last = --(*n);
    wait_swap(s, 0, last);
    for (;;) {
        i64 l = 2 * i + 1, r = l + 1, m = i;
        if (l < last && wait_less(s, l, m)) m = l;
        if (r < last && wait_less(s, r, m)) m = r;
        if (m == i) return;
        wait_swap(s, i, m);
        i = m;
    }
}

/* -- the queue: rounds in priority order (-priority, then job) ----------------------------- */

static void queue_insert(state_t *s, i64 *n, double key, i64 j, i64 r, double ready, i64 left,
                         double done) {
    i64 lo = 0, hi = *n; /* the first entry after (key, j): bisect.insort's place */
    while (lo < hi) {
        i64 mid = (lo + hi) / 2;
        if (key < s->q_key[mid] || (key == s->q_key[mid] && j < s->q_j[mid])) hi = mid;
        else lo = mid + 1;
    }
    i64 m = *n - lo;
    memmove(s->q_key + lo + 1, s->q_key + lo, m * sizeof(double));
    memmove(s->q_j + lo + 1, s->q_j + lo, m * sizeof(i64));
    memmove(s->q_r + lo + 1, s->q_r + lo, m * sizeof(i64));
    memmove(s->q_ready + lo + 1, s->q_ready + lo, m * sizeof(double));
    memmove(s->q_left + lo + 1, s->q_left + lo, m * sizeof(i64));
    memmove(s->q_done + lo + 1, s->q_done + lo, m * sizeof(double));
    s->q_key[lo] = key, s->q_j[lo] = j, s->q_r[lo] = r, s->q_ready[lo] = ready;
    s->q_left[lo] = left, s->q_done[lo] = done;
    (*n)++;
}

/* -- relaxed mode: per class, a heap of (free time, GPU) and one of free times alone ------- */

static int gpu_less(const state_t *s, i64 a, i64 b) {
    return s->heap_t[a] < s->heap_t[b] || (s->heap_t[a] == s->heap_t[b] && s->heap_g[a] < s->heap_g[b]);
}

static void gpu_down(state_t *s, i64 base, i64 size, i64 i) {
    for (;;) {
        i64 l = 2 * i + 1, r = l + 1, m = i;
        if (l < size && gpu_less(s, base + l, base + m)) m = l;
        if (r < size && gpu_less(s, base + r, base + m)) m = r;
        if (m == i) return;
        double t = s->heap_t[base + i];
        i64 g = s->heap_g[base + i];
        s->heap_t[base + i] = s->heap_t[base + m], s->heap_g[base + i] = s->heap_g[base + m];
        s->heap_t[base + m] = t, s->heap_g[base + m] = g;
        i = m;
    }
}

static void float_replace(double *heap, i64 size, double value) {
    i64 i = 0;
    for (;;) { /* sift value down from the root */
        i64 l = 2 * i + 1, r = l + 1, m = l;
        if (l >= size) break;
        if (r < size && heap[r] < heap[l]) m = r;
        if (!(heap[m] < value)) break;
        heap[i] = heap[m];
        i = m;
    }
    heap[i] = value;
}

static void build_heaps(state_t *s) {
    for (i64 c = 0; c < s->n_classes; c++) {
        i64 base = s->member_start[c], size = s->member_start[c + 1] - base;
        for (i64 i = 0; i < size; i++) {
            i64 g = s->member_gpu[base + i];
            s->heap_t[base + i] = s->free[g], s->heap_g[base + i] = g;
        }
        for (i64 i = size / 2 - 1; i >= 0; i--) gpu_down(s, base, size, i);
    }
}

static void add_task(state_t *s, i64 *n_tasks, i64 j, i64 r, i64 k, i64 g, double moment) {
    i64 *t = s->task + 4 * (*n_tasks);
    t[0] = j, t[1] = r, t[2] = k, t[3] = g;
    s->start[(*n_tasks)++] = moment;
}

/* tight: when all of a round's results would be ready were its `left` tasks placed one by one
 * where each is ready earliest (on copies of the heaps of `virt` it touches), at least `target` */
static double projected_ready(state_t *s, double moment, i64 first, i64 last, i64 left,
                              double target) {
    for (i64 i = first; i < last; i++) s->proj_copied[s->choice_class[i]] = 0;
    for (i64 n = 0; n < left; n++) {
        double best = 1.0 / 0.0, best_compute = 0.0;
        i64 best_class = -1;
        for (i64 i = first; i < last; i++) {
            i64 c = s->choice_class[i];
            double head = (s->proj_copied[c] ? s->proj : s->virt)[s->member_start[c]];
            double ready = (head > moment ? head : moment) + s->choice_pace[i];
            if (ready < best) best = ready, best_class = c, best_compute = s->choice_compute[i];
        }
        i64 base = s->member_start[best_class], size = s->member_start[best_class + 1] - base;
        if (!s->proj_copied[best_class]) {
            memcpy(s->proj + base, s->virt + base, size * sizeof(double));
            s->proj_copied[best_class] = 1;
        }
        double head = s->proj[base];
        float_replace(s->proj + base, size, (head > moment ? head : moment) + best_compute);
        if (best > target) target = best;
    }
    return target;
}

static i64 relaxed_event(state_t *s, double moment, i64 n_queue, i64 *n_tasks) {
    i64 idle = 0;
    for (i64 c = 0; c < s->n_classes; c++) idle += s->heap_t[s->member_start[c]] <= moment;
    if (!idle) return 0;
    memcpy(s->virt, s->heap_t, s->n_gpus * sizeof(double));
    i64 visits = s->n_classes;
    for (i64 q = 0; q < n_queue; q++) {
        if (!idle) return visits;
        i64 j = s->q_j[q], first = s->choice_start[j], last = s->choice_start[j + 1];
        i64 waiting = 0;
        double target = s->q_done[q];
        if (s->tight) {
            target = projected_ready(s, moment, first, last, s->q_left[q], target);
            visits += s->q_left[q] * (last - first);
        }
        while (s->q_left[q] > waiting) {
            visits += last - first;
            double best = 1.0 / 0.0, best_compute = 0.0, fit = -1.0 / 0.0, fit_compute = 0.0;
            i64 best_class = -1, fit_class = -1;
            for (i64 i = first; i < last; i++) {
                double head = s->virt[s->member_start[s->choice_class[i]]];
                double ready = (head > moment ? head : moment) + s->choice_pace[i];
                if (ready < best) best = ready, best_class = s->choice_class[i], best_compute = s->choice_compute[i];
                if (s->tight && head <= moment && ready <= target && ready > fit)
                    fit = ready, fit_class = s->choice_class[i], fit_compute = s->choice_compute[i];
            }
            if (fit_class >= 0) best = fit, best_class = fit_class, best_compute = fit_compute;
            i64 base = s->member_start[best_class], size = s->member_start[best_class + 1] - base;
            double head = s->virt[base];
            if (head > moment) {
                if (!s->reserve) break; /* its best GPU is busy: the round waits for it */
                float_replace(s->virt + base, size, head + best_compute);
                waiting++;
                continue;
            }
            double end = moment + best_compute;
            i64 g = s->heap_g[base];
            s->heap_t[base] = end;
            gpu_down(s, base, size, 0);
            float_replace(s->virt + base, size, end);
            if (s->virt[base] > moment) idle--; /* its last idle GPU taken */
            s->free[g] = end;
            add_task(s, n_tasks, j, s->q_r[q], s->tasks_per_round[j] - s->q_left[q], g, moment);
            s->q_left[q]--;
            if (best > s->q_done[q]) s->q_done[q] = best;
        }
    }
    return visits;
}

/* -- gang mode ------------------------------------------------------------------------------ */

static i64 gang_event(state_t *s, double moment, i64 n_queue, i64 *n_tasks, i64 *gathered) {
    double *v = s->free;
    if (s->reserve) {
        memcpy(s->virt, s->free, s->n_gpus * sizeof(double));
        v = s->virt;
    }
    i64 idle = 0;
    for (i64 g = 0; g < s->n_gpus; g++) idle += v[g] <= moment;
    i64 visits = 0;
    for (i64 q = 0; q < n_queue; q++) {
        if (!idle) return visits;
        i64 j = s->q_j[q], k_tasks = s->tasks_per_round[j];
        i64 o = s->order_start[j], n_order = s->order_start[j + 1] - o;
        const i64 *order = s->order_gpu + o;
        const double *paces = s->order_pace + o;
        i64 t0 = s->thr_start[j], t1 = s->thr_start[j + 1];
        visits += 1 + (t1 - t0);
        *gathered += n_order;
        double *ends = s->ends; /* free times in pace order */
        i64 free_now = 0;
        for (i64 i = 0; i < n_order; i++) {
            ends[i] = v[order[i]];
            free_now += ends[i] <= moment;
        }
        if (!s->reserve && free_now < k_tasks) continue;
        /* the earliest finish: for each pace p, the K earliest-free GPUs of pace <= p; the K
         * smallest free times of each prefix, kept sorted as the prefix grows */
        double best = 1.0 / 0.0, best_start = 1.0 / 0.0, *smallest = s->smallest;
        i64 best_end = 0, kept = 0, at = 0;
        for (i64 t = t0; t < t1; t++) {
            for (; at < s->thr_end[t]; at++) {
                double e = ends[at];
                if (kept == k_tasks && !(e < smallest[kept - 1])) continue;
                i64 i = kept < k_tasks ? kept++ : kept - 1;
                while (i > 0 && smallest[i - 1] > e) smallest[i] = smallest[i - 1], i--;
                smallest[i] = e;
            }
            double kth = smallest[k_tasks - 1];
            double begin = kth > moment ? kth : moment;
            if (begin + s->thr_pace[t] < best) {
                best = begin + s->thr_pace[t], best_start = begin, best_end = s->thr_end[t];
            }
        }
        if (best_start > moment) { /* faster GPUs free soon: wait for them */
            if (s->reserve) { /* the K earliest-free, earlier positions first on ties */
                i64 *held = s->held, n_held = 0, last = 0;
                for (i64 p = 0; p < best_end; p++) {
                    if (n_held == k_tasks && !(ends[p] < ends[held[n_held - 1]])) continue;
                    i64 i = n_held < k_tasks ? n_held++ : n_held - 1;
                    while (i > 0 && ends[held[i - 1]] > ends[p]) held[i] = held[i - 1], i--;
                    held[i] = p;
                }
                for (i64 i = 0; i < n_held; i++) {
                    idle -= ends[held[i]] <= moment;
                    if (held[i] > last) last = held[i];
                }
                double until = best_start + paces[last]; /* its slowest GPU's end */
                for (i64 i = 0; i < n_held; i++) v[order[held[i]]] = until;
            }
            continue;
        }
        /* hold the slowest idle GPUs that finish as early, leaving the faster ones */
        i64 *chosen = s->chosen, n_chosen = 0, slowest = -1;
        for (i64 p = best_end - 1; p >= 0 && n_chosen < k_tasks; p--) {
            if (ends[p] <= moment) {
                if (slowest < 0) slowest = p;
                chosen[n_chosen++] = order[p];
            }
        }
        if (n_chosen < k_tasks) continue; /* a length lost in the addition to the moment */
        double length = paces[slowest];
        if (moment + length > moment) idle -= k_tasks;
        for (i64 i = 1; i < n_chosen; i++) { /* by GPU index */
            i64 g = chosen[i], m = i;
            while (m > 0 && chosen[m - 1] > g) chosen[m] = chosen[m - 1], m--;
            chosen[m] = g;
        }
        for (i64 i = 0; i < n_chosen; i++) {
            add_task(s, n_tasks, j, s->q_r[q], i, chosen[i], moment);
            s->free[chosen[i]] = v[chosen[i]] = moment + length;
        }
        s->q_left[q] = 0, s->q_done[q] = moment + length;
    }
    return visits;
}

/* -- the loop ------------------------------------------------------------------------------- */

int priority_run(state_t *s) {
    double deadline = s->has_deadline ? now() + s->seconds_left : 0.0;
    double moment = 0.0;
    i64 n_wait = 0, n_queue = 0, n_tasks = 0, events = 0, scanned = 0, n_ck = 0, since = 0;
    i64 gathered = 0; /* gang: GPU free times read, in this decode (the compiled work) */
    i64 n = s->n_jobs, n_gpus = s->n_gpus;
    if (s->restart < 0) {
        for (i64 g = 0; g < n_gpus; g++) s->free[g] = 0.0;
        for (i64 j = 0; j < n; j++) {
            s->completion[j] = 0.0, s->entry[j] = 0;
            wait_push(s, &n_wait, s->arrival[j], j, 0);
        }
    } else { /* from checkpoint `restart` of the previous decode */
        if (s->before_offset[s->restart] > s->arena_room) return GROW; /* its records first */
        const double *c = s->before_arena + s->before_offset[s->restart];
        moment = c[0], n_tasks = (i64)c[1], events = (i64)c[2], scanned = (i64)c[3];
        i64 w = (i64)c[4], queued = (i64)c[5];
        c += HEAD;
        memcpy(s->free, c, n_gpus * sizeof(double)), c += n_gpus;
        memcpy(s->completion, c, n * sizeof(double)), c += n;
        for (i64 i = 0; i < w; i++, c += 3) wait_push(s, &n_wait, c[0], (i64)c[1], (i64)c[2]);
        for (i64 i = 0; i < queued; i++, c += 6) {
            s->q_key[i] = c[0], s->q_j[i] = (i64)c[1], s->q_r[i] = (i64)c[2];
            s->q_ready[i] = c[3], s->q_left[i] = (i64)c[4], s->q_done[i] = c[5];
        }
        n_queue = queued;
        memcpy(s->task, s->before_task, 4 * n_tasks * sizeof(i64));
        memcpy(s->start, s->before_start, n_tasks * sizeof(double));
        memcpy(s->entry, s->before_entry, n * sizeof(i64));
        n_ck = s->restart;
        memcpy(s->offset, s->before_offset, (n_ck + 1) * sizeof(i64));
        memcpy(s->arena, s->before_arena, s->before_offset[n_ck] * sizeof(double));
    }
    if (s->restart < 0) s->offset[0] = 0;
    if (!s->gang) build_heaps(s);
    while (n_wait || n_queue) {
        since++;
        if (s->has_deadline && since >= s->check_every) {
            since = 0;
            if (now() >= deadline) return OUT_OF_TIME;
        }
        i64 n_enter = 0, first = 0;
        while (n_wait && s->wait_t[0] <= moment) {
            s->enter_t[n_enter] = s->wait_t[0], s->enter_j[n_enter] = s->wait_j[0];
            s->enter_r[n_enter] = s->wait_r[0];
            first |= s->enter_r[n_enter++] == 0;
            wait_pop(s, &n_wait);
        }
        if (first) { /* a job's first entry: a checkpoint */
            scanned += n_wait + n_queue + n_gpus;
            i64 size = HEAD + n_gpus + n + 3 * (n_wait + n_enter) + 6 * n_queue;
            if (s->offset[n_ck] + size > s->arena_room) return GROW;
            double *c = s->arena + s->offset[n_ck];
            c[0] = moment, c[1] = (double)n_tasks, c[2] = (double)events, c[3] = (double)scanned;
            c[4] = (double)(n_wait + n_enter), c[5] = (double)n_queue;
            c += HEAD;
            memcpy(c, s->free, n_gpus * sizeof(double)), c += n_gpus;
            memcpy(c, s->completion, n * sizeof(double)), c += n;
            for (i64 i = 0; i < n_wait; i++, c += 3)
                c[0] = s->wait_t[i], c[1] = (double)s->wait_j[i], c[2] = (double)s->wait_r[i];
            for (i64 i = 0; i < n_enter; i++, c += 3)
                c[0] = s->enter_t[i], c[1] = (double)s->enter_j[i], c[2] = (double)s->enter_r[i];
            for (i64 i = 0; i < n_queue; i++, c += 6) {
                c[0] = s->q_key[i], c[1] = (double)s->q_j[i], c[2] = (double)s->q_r[i];
                c[3] = s->q_ready[i], c[4] = (double)s->q_left[i], c[5] = s->q_done[i];
            }
            s->offset[n_ck + 1] = s->offset[n_ck] + size;
            n_ck++;
        }
        for (i64 i = 0; i < n_enter; i++) {
            i64 j = s->enter_j[i];
            if (s->enter_r[i] == 0) s->entry[j] = n_ck - 1;
            queue_insert(s, &n_queue, -s->priority[j], j, s->enter_r[i], s->enter_t[i],
                         s->tasks_per_round[j], s->enter_t[i]);
        }
        events++;
        scanned += s->gang ? gang_event(s, moment, n_queue, &n_tasks, &gathered)
                           : relaxed_event(s, moment, n_queue, &n_tasks);
        i64 kept = 0; /* the rounds whose tasks are all placed leave the queue */
        for (i64 q = 0; q < n_queue; q++) {
            if (s->q_left[q] == 0) {
                i64 j = s->q_j[q], r = s->q_r[q];
                if (r + 1 < s->rounds[j]) wait_push(s, &n_wait, s->q_done[q], j, r + 1);
                else s->completion[j] = s->q_done[q];
                continue;
            }
            s->q_key[kept] = s->q_key[q], s->q_j[kept] = s->q_j[q], s->q_r[kept] = s->q_r[q];
            s->q_ready[kept] = s->q_ready[q], s->q_left[kept] = s->q_left[q];
            s->q_done[kept++] = s->q_done[q];
        }
        n_queue = kept;
        double next = 1.0 / 0.0;
        int any = 0;
        if (n_wait) next = s->wait_t[0], any = 1;
        if (n_queue) {
            for (i64 g = 0; g < n_gpus; g++) {
                if (s->free[g] > moment && s->free[g] < next) next = s->free[g];
                any |= s->free[g] > moment;
            }
        }
        if (!any) break;
        moment = next;
    }
    s->out[0] = DONE, s->out[1] = n_tasks, s->out[2] = events, s->out[3] = scanned;
    s->out[4] = n_ck, s->out[5] = gathered;
    return DONE;
}
