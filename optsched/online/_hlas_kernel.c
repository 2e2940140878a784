/* HLAS in relaxed mode as one event loop in C: the loop of optsched/online/_hlas_compiled.py,
 * which prepares its arrays, compiles this file on first use and calls hlas_run through
 * ctypes. Plain C11, no Python API. Every function here replays a step of the Python engine
 * (optsched/online/engine.py, simulator.py, hlas.py) with the same floating-point
 * expressions in the same order; compile with -ffp-contract=off so that none is fused. */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

typedef int64_t i64;
typedef int32_t i32;
typedef uint8_t u8;
typedef uint64_t u64;

/* The arrays the driver passes, by name, as (C type, name); a 2-D array is row-major and
 * its shape is in a comment. hlas_fields lists them for the driver, which finds each by its
 * name and checks its type. */
#define HLAS_ARRAYS(X)                                                                       \
    /* the jobs */                                                                           \
    X(double, arrival) X(double, weight) X(i32, tasks) X(i32, rounds) X(double, fastest)     \
    X(double, profiled)      /* jobs x profile classes: the compute the policy sees */      \
    X(i32, class_column)     /* speed classes: a profile class of each (its column) */      \
    X(double, compute)       /* jobs x profile classes: realised compute */                 \
    X(double, sync)          /* jobs x profile classes */                                   \
    X(i32, queue_rank) X(i32, queue_job)  /* queue_job: also the arrivals in event order */  \
    X(i32, gain_rank) X(i32, gain_job) X(i32, fast_rank) X(i32, fast_job)                    \
                             /* speed classes x jobs */                                     \
    /* each job's state */                                                                   \
    X(i32, waiting) X(i32, started) X(i32, rounds_done) X(double, last_start)                \
    X(double, entered) X(u8, promoted) X(double, round_ready) X(u8, active) X(u8, in_queue)  \
    X(i32, level) X(i32, counted) X(i32, left) X(i64, left_stamp) X(double, completion)      \
    /* the GPUs */                                                                           \
    X(i32, speed_class) X(i32, profile_class) X(i32, position)                              \
    X(i32, members)          /* speed classes x widest */                                   \
    X(u64, idle)             /* speed classes x gpu_words: sets of idle GPUs by position */  \
    X(i32, on_gpu) X(i64, taken) X(double, busy) X(i64, idle_in_class)                      \
    /* the sets of waiting jobs: depth x job_words, depth x classes x job_words (ranks) */  \
    X(u64, queue) X(u64, gain) X(u64, fast) X(i64, queued) X(i64, level_tasks)               \
    /* the loop */                                                                           \
    X(i64, ints) X(double, floats) X(double, levels)                                        \
    X(double, heap_t) X(i64, heap_seq) X(i32, heap_kind) X(i32, heap_what)                   \
    X(double, rev_t) X(i32, rev_job)                                                         \
    X(i32, dec_job) X(i32, dec_gpu) X(i32, touched) X(i32, due)                              \
    X(i64, cursor) X(double, keys) X(i64, group) X(i64, pos)                                 \
    X(i64, log_kind) X(i64, log_int) /* entries x 4 */ X(double, log_float) /* entries x 2 */ \
    X(double, history)

/* The sizes, after the arrays (listed as "size name"). */
#define HLAS_SIZES(X)                                                                        \
    X(n_jobs) X(n_gpus) X(n_classes) X(n_profiles) X(depth) X(widest) X(job_words)      \
    X(gpu_words) X(rev_room) X(log_room)

#define AS_MEMBER(type, name) type *name;
#define AS_SIZE(name) i64 name;
typedef struct {
    HLAS_ARRAYS(AS_MEMBER)
    HLAS_SIZES(AS_SIZE)
} hlas_t;

#define AS_TEXT(type, name) #type " " #name "\n"
#define SIZE_TEXT(name) "size " #name "\n"
const char hlas_fields[] = HLAS_ARRAYS(AS_TEXT) HLAS_SIZES(SIZE_TEXT);

/* event kinds (engine.ARRIVE, simulator._FREE, simulator._READY) */
enum { ARRIVE = 0, FREE = 3, READY = 4 };
/* why hlas_run returned; FULL: a push into a full revisit heap (the driver's bug) */
enum { DONE = 0, LEVELS = 1, FLUSH = 2, GROW = 3, FULL = -1 };
/* observer hook calls in the replay buffer */
enum { ON_TASK = 0, ON_HELD = 1, ON_DONE = 2 };
/* the indices of ints and floats: _hlas_compiled.I_* and F_* */
enum {
    I_SEQ, I_EVENTS, I_DECISIONS, I_UNFINISHED, I_HEAP, I_REVISITS, I_LOG, I_PHASE, I_STAMP,
    I_LEVELS, I_REKEY, I_FINISHED, I_IDLE, I_MAPPING_B, I_HISTORY, I_LOGGING, I_DONE, I_MARGIN, I_ARRIVED
};
enum { F_NOW, F_STARVATION, F_OBJECTIVE, F_WEIGHTED_JCT, F_JCT_SUM, F_MAKESPAN };

/* -- sets of ranks: insert, delete and "the first member >= x" -------------------------------
 * A set of n ranks is a hierarchy of bit words: level 0 has a bit per rank, each level above
 * a bit per word of the level below (set when that word is not 0), up to a level of one word;
 * the levels lie one after the other (set_words gives their total). */

static void set_add(u64 *set, i64 n, i64 i) {
    for (i64 words = (n + 63) >> 6;; words = (words + 63) >> 6) {
        u64 was = set[i >> 6];
        set[i >> 6] = was | (1ULL << (i & 63));
        if (was || words == 1) return;
        set += words, i >>= 6;
    }
}

static void set_remove(u64 *set, i64 n, i64 i) {
    for (i64 words = (n + 63) >> 6;; words = (words + 63) >> 6) {
        set[i >> 6] &= ~(1ULL << (i & 63));
        if (set[i >> 6] || words == 1) return;
        set += words, i >>= 6;
    }
}

/* The smallest member >= x of a set of n ranks, or -1. */
static i64 set_next(const u64 *set, i64 n, i64 x) {
    if (x >= n) return -1;
    const u64 *below[8]; /* the levels climbed past: at most 6 for 2^31 ranks */
    int climbed = 0;
    i64 words = (n + 63) >> 6, i = x;
    for (;;) { /* climb until a word holds a member at or after bit i */
        u64 word = set[i >> 6] & (~0ULL << (i & 63));
        if (word) {
            i = (i & ~63LL) | __builtin_ctzll(word);
            break;
        }
        if (words == 1) return -1;
        below[climbed++] = set;
        set += words, i = (i >> 6) + 1, words = (words + 63) >> 6;
        if ((i >> 6) >= words) return -1;
    }
    while (climbed) { /* descend to the first member of the word found */
        const u64 *level = below[--climbed];
        i = (i << 6) | __builtin_ctzll(level[i]);
    }
    return i;
}

static void set_put(u64 *set, i64 n, i64 i, int present) {
    if (present)
        set_add(set, n, i);
    else
        set_remove(set, n, i);
}

static u64 *queue_set(hlas_t *s, i64 level) { return s->queue + level * s->job_words; }
static u64 *gain_set(hlas_t *s, i64 level, i64 c) {
    return s->gain + (level * s->n_classes + c) * s->job_words;
}
static u64 *fast_set(hlas_t *s, i64 level, i64 c) {
    return s->fast + (level * s->n_classes + c) * s->job_words;
}
static u64 *idle_set(hlas_t *s, i64 c) { return s->idle + c * s->gpu_words; }

/* The compute time the policy sees for job j on speed class c. */
static double profiled_time(hlas_t *s, i64 j, i64 c) {
    return s->profiled[j * s->n_profiles + s->class_column[c]];
}

/* -- the events and the revisits ---------------------------------------------------------
 * The events are the arrivals, in queue order (numbered 1..n by the engine, before any other
 * push), merged with a heap of the other events ordered by (time, number). */

/* An event, after every earlier push at the same time (the engine's sequence number). */
static void push(hlas_t *s, double t, i32 kind, i32 what) {
    i64 seq = ++s->ints[I_SEQ];
    double *ht = s->heap_t;
    i64 *hs = s->heap_seq;
    i32 *hk = s->heap_kind, *hw = s->heap_what;
    i64 i = s->ints[I_HEAP]++;
    while (i > 0) {
        i64 p = (i - 1) >> 1;
        if (ht[p] < t || (ht[p] == t && hs[p] < seq)) break;
        ht[i] = ht[p], hs[i] = hs[p], hk[i] = hk[p], hw[i] = hw[p];
        i = p;
    }
    ht[i] = t, hs[i] = seq, hk[i] = kind, hw[i] = what;
}

static void pop(hlas_t *s, i32 *kind, i32 *what) {
    double *ht = s->heap_t;
    i64 *hs = s->heap_seq;
    i32 *hk = s->heap_kind, *hw = s->heap_what;
    *kind = hk[0], *what = hw[0];
    i64 n = --s->ints[I_HEAP];
    double t = ht[n];
    i64 q = hs[n];
    i32 k = hk[n], w = hw[n];
    i64 i = 0;
    for (;;) {
        i64 c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && (ht[c + 1] < ht[c] || (ht[c + 1] == ht[c] && hs[c + 1] < hs[c]))) c++;
        if (t < ht[c] || (t == ht[c] && q < hs[c])) break;
        ht[i] = ht[c], hs[i] = hs[c], hk[i] = hk[c], hw[i] = hw[c];
        i = c;
    }
    if (n > 0) ht[i] = t, hs[i] = q, hk[i] = k, hw[i] = w;
}

static int push_revisit(hlas_t *s, double t, i32 j) {
    double *rt = s->rev_t;
    i32 *rj = s->rev_job;
    i64 i = s->ints[I_REVISITS];
    if (i == s->rev_room) return FULL; /* never: the driver keeps room for one stretch */
    s->ints[I_REVISITS] = i + 1;
    while (i > 0) {
        i64 p = (i - 1) >> 1;
        if (rt[p] < t || (rt[p] == t && rj[p] <= j)) break;
        rt[i] = rt[p], rj[i] = rj[p];
        i = p;
    }
    rt[i] = t, rj[i] = j;
    return 0;
}

static i32 pop_revisit(hlas_t *s) {
    double *rt = s->rev_t;
    i32 *rj = s->rev_job;
    i32 job = rj[0];
    i64 n = --s->ints[I_REVISITS];
    double t = rt[n];
    i32 j = rj[n];
    i64 i = 0;
    for (;;) {
        i64 c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && (rt[c + 1] < rt[c] || (rt[c + 1] == rt[c] && rj[c + 1] < rj[c]))) c++;
        if (t < rt[c] || (t == rt[c] && j <= rj[c])) break;
        rt[i] = rt[c], rj[i] = rj[c];
        i = c;
    }
    if (n > 0) rt[i] = t, rj[i] = j;
    return job;
}

/* -- the policy: HLAS.priority, HLAS.revisit, _LevelClassQueue.put/drop ------------------- */

static i64 level_of(hlas_t *s, i64 j) {
    double own = ((double)s->started[j] * s->fastest[j] - s->entered[j]) / s->weight[j];
    i64 level = 0;
    for (i64 q = 0; q < s->ints[I_LEVELS]; q++)
        if (own >= s->levels[q]) level++;
    return level;
}

/* Add (delta 1) or remove (-1) job j's entries at level: the queue, the per-class orders of
 * the classes it can use, the level's jobs and waiting tasks. */
static void count(hlas_t *s, i64 j, i64 level, i32 delta) {
    i64 n = s->n_jobs;
    s->level_tasks[level] += delta * s->counted[j];
    s->queued[level] += delta;
    set_put(queue_set(s, level), n, s->queue_rank[j], delta > 0);
    for (i64 c = 0; c < s->n_classes; c++) {
        i32 r = s->gain_rank[c * n + j];
        if (r >= 0) {
            set_put(gain_set(s, level, c), n, r, delta > 0);
            set_put(fast_set(s, level, c), n, s->fast_rank[c * n + j], delta > 0);
        }
    }
}

static void index_job(hlas_t *s, i64 j, i64 level) {
    s->in_queue[j] = 1;
    s->level[j] = level;
    s->counted[j] = s->waiting[j];
    count(s, j, level, 1);
}

static void unindex_job(hlas_t *s, i64 j) {
    s->in_queue[j] = 0;
    count(s, j, s->level[j], -1);
}

/* The engine's _queue: the job's key (a starving job re-enters queue 0), its place in the
 * queue, and its revisit time. */
static int queue_job(hlas_t *s, i64 j, double now) {
    double starvation = s->floats[F_STARVATION];
    double service = (double)s->started[j] * s->fastest[j];
    i64 level = level_of(s, j);
    if (level && starvation > 0 && now - s->last_start[j] > starvation * service) {
        s->entered[j] = service;
        s->promoted[j] = 1;
        level = 0;
    }
    if (s->in_queue[j]) {
        if (s->level[j] != level || s->counted[j] != s->waiting[j]) {
            unindex_job(s, j);
            index_job(s, j, level);
        }
    } else {
        index_job(s, j, level);
    }
    if (starvation > 0 && level_of(s, j)) {
        double at = s->last_start[j] + starvation * (double)s->started[j] * s->fastest[j];
        /* hlas.after: just before at, and later than now */
        double early = at - 1e-9 * fmax(1.0, fabs(at));
        double later = nextafter(now, INFINITY);
        at = later > early ? later : early;
        if (at < INFINITY) /* not an infinite or NaN time (starvation=inf): never */
            return push_revisit(s, at, (i32)j);
    }
    return 0;
}

static int by_index(const void *a, const void *b) {
    i32 x = *(const i32 *)a, y = *(const i32 *)b;
    return (x > y) - (x < y);
}

/* Re-key the waiting jobs whose revisit time has come, each once, by index. */
static int requeue_due(hlas_t *s, double now) {
    i64 n = 0;
    i64 stamp = ++s->ints[I_STAMP];
    while (s->ints[I_REVISITS] && s->rev_t[0] <= now) {
        i32 j = pop_revisit(s);
        if (s->left_stamp[j] != stamp) {
            s->left_stamp[j] = stamp;
            s->due[n++] = j;
        }
    }
    qsort(s->due, (size_t)n, sizeof(i32), by_index);
    for (i64 k = 0; k < n; k++) {
        i32 j = s->due[k];
        if (s->active[j] && s->waiting[j] && queue_job(s, j, now)) return FULL;
    }
    return 0;
}

/* -- the decision: mapping B (speed-up matching), then mapping A (fastest idle GPU) ------- */

static i64 left_of(hlas_t *s, i64 j, i64 stamp) {
    return s->left_stamp[j] == stamp ? s->left[j] : s->waiting[j];
}

/* The decisions of one instant into dec_job/dec_gpu; their count. */
static i64 decide(hlas_t *s) {
    i64 n = s->n_jobs, n_classes = s->n_classes, widest = s->widest;
    i64 stamp = ++s->ints[I_STAMP];
    i64 *taken = s->taken;
    i32 *members = s->members;
    i64 out = 0;
    if (s->ints[I_MAPPING_B]) {
        i64 level = 0;
        while (s->queued[level] == 0) level++;
        i64 pending = s->level_tasks[level];
        i64 *group = s->group, *pos = s->pos, *gain_cursor = s->cursor;
        double *keys = s->keys;
        for (i64 c = 0; c < n_classes; c++) {
            i64 r = set_next(fast_set(s, level, c), n, 0);
            keys[c] = r >= 0 ? profiled_time(s, s->fast_job[c * n + r], c) : INFINITY;
            group[c] = s->idle_in_class[c] ? 0 : 2; /* 0 to visit, 1 now, 2 visited */
            gain_cursor[c] = 0;
        }
        while (pending) {
            /* the classes of the next time (hlas._by_fastest), their idle GPUs by index */
            i64 first = -1;
            for (i64 c = 0; c < n_classes; c++)
                if (group[c] == 0 && (first < 0 || keys[c] < keys[first])) first = c;
            if (first < 0) break;
            for (i64 c = 0; c < n_classes; c++)
                if (group[c] == 0 && keys[c] == keys[first]) {
                    group[c] = 1;
                    pos[c] = set_next(idle_set(s, c), widest, 0);
                }
            while (pending) {
                i64 best = -1;
                for (i64 c = 0; c < n_classes; c++)
                    if (group[c] == 1 && pos[c] >= 0 &&
                        (best < 0 ||
                         members[c * widest + pos[c]] < members[best * widest + pos[best]]))
                        best = c;
                if (best < 0) break;
                i64 c = best;
                i32 g = members[c * widest + pos[c]];
                pos[c] = set_next(idle_set(s, c), widest, pos[c] + 1);
                u64 *gain = gain_set(s, level, c);
                i64 r = set_next(gain, n, gain_cursor[c]);
                while (r >= 0 && !left_of(s, s->gain_job[c * n + r], stamp))
                    r = set_next(gain, n, r + 1);
                if (r < 0) {
                    gain_cursor[c] = n;
                    continue;
                }
                gain_cursor[c] = r;
                i32 j = s->gain_job[c * n + r];
                s->left[j] = left_of(s, j, stamp) - 1;
                s->left_stamp[j] = stamp;
                pending--;
                taken[g] = stamp;
                s->dec_job[out] = j, s->dec_gpu[out] = g;
                out++;
            }
            for (i64 c = 0; c < n_classes; c++)
                if (group[c] == 1) group[c] = 2;
        }
    }
    /* mapping A (hlas.fill_fastest) over the whole queue with the GPUs and tasks left */
    i64 total = s->ints[I_IDLE];
    i64 *cursor = s->pos;
    for (i64 c = 0; c < n_classes; c++) cursor[c] = 0;
    for (i64 level = 0; level < s->depth; level++) {
        if (out == total) break;
        if (!s->queued[level]) continue;
        u64 *set = queue_set(s, level);
        for (i64 r = set_next(set, n, 0); r >= 0; r = set_next(set, n, r + 1)) {
            if (out == total) break;
            i32 j = s->queue_job[r];
            i64 tasks = left_of(s, j, stamp);
            for (i64 t = 0; t < tasks; t++) {
                i64 best = -1, best_g = 0;
                double best_t = INFINITY;
                for (i64 c = 0; c < n_classes; c++) {
                    u64 *idle = idle_set(s, c);
                    i64 p = set_next(idle, widest, cursor[c]);
                    while (p >= 0 && taken[members[c * widest + p]] == stamp)
                        p = set_next(idle, widest, p + 1);
                    if (p < 0) {
                        cursor[c] = widest;
                        continue;
                    }
                    cursor[c] = p;
                    i64 g = members[c * widest + p];
                    double time = profiled_time(s, j, c);
                    if (time < best_t || (time == best_t && g < best_g))
                        best = g, best_t = time, best_g = g;
                }
                if (best < 0) break;
                taken[best] = stamp;
                s->dec_job[out] = j, s->dec_gpu[out] = (i32)best;
                out++;
            }
        }
    }
    return out;
}

/* -- the execution model: simulator._BasicEngine in relaxed mode -------------------------- */

static void log_call(hlas_t *s, i64 kind, i64 a, i64 b, i64 c, i64 d, double x, double y) {
    i64 k = s->ints[I_LOG]++;
    s->log_kind[k] = kind;
    i64 *ints = s->log_int + 4 * k;
    ints[0] = a, ints[1] = b, ints[2] = c, ints[3] = d;
    s->log_float[2 * k] = x, s->log_float[2 * k + 1] = y;
}

static void start_task(hlas_t *s, i32 j, i32 g, double now) {
    i64 p = s->profile_class[g];
    double c = s->compute[j * s->n_profiles + p];
    i64 task = s->tasks[j] - s->waiting[j];
    s->waiting[j]--;
    s->on_gpu[g] = j;
    s->started[j]++;
    s->last_start[j] = now;
    double ready = now + c + s->sync[j * s->n_profiles + p];
    if (ready > s->round_ready[j]) s->round_ready[j] = ready;
    push(s, now + c, FREE, g);
    s->busy[g] += (now + c) - now;
    if (s->ints[I_LOGGING]) {
        log_call(s, ON_TASK, j, s->rounds_done[j], task, g, now, now + c);
        log_call(s, ON_HELD, g, 0, 0, 0, now, now + c);
    }
    if (s->waiting[j] == 0) push(s, s->round_ready[j], READY, j);
}

/* One event: LEVELS when a job finished and the finished count is a power of two, FULL on
 * a full revisit heap, else 0. */
static int handle(hlas_t *s, i32 kind, i32 who, double now) {
    if (kind == FREE) {
        i64 c = s->speed_class[who];
        set_add(idle_set(s, c), s->widest, s->position[who]);
        s->idle_in_class[c]++;
        s->ints[I_IDLE]++;
        i32 j = s->on_gpu[who];
        if (j >= 0) {
            s->on_gpu[who] = -1;
            if (s->waiting[j]) return queue_job(s, j, now);
        }
        return 0;
    }
    i32 j = who;
    if (kind == READY) {
        s->rounds_done[j]++;
        if (s->rounds_done[j] < s->rounds[j]) {
            s->waiting[j] = s->tasks[j];
            s->round_ready[j] = now;
            return queue_job(s, j, now);
        }
        s->active[j] = 0;
        s->ints[I_UNFINISHED]--;
        double w = s->weight[j], a = s->arrival[j];
        s->completion[j] = now;
        double *f = s->floats;
        f[F_OBJECTIVE] += w * now;
        f[F_WEIGHTED_JCT] += w * (now - a);
        f[F_JCT_SUM] += now - a;
        if (now > f[F_MAKESPAN]) f[F_MAKESPAN] = now;
        s->ints[I_DONE]++;
        if (s->ints[I_LOGGING]) log_call(s, ON_DONE, j, 0, 0, 0, now, now);
        if (!s->ints[I_HISTORY]) return 0;
        i64 n = s->ints[I_FINISHED];
        s->history[n] = (double)s->started[j] * s->fastest[j];
        s->ints[I_FINISHED] = n + 1;
        return ((n + 1) & n) == 0 ? LEVELS : 0;
    }
    /* an arrival */
    s->waiting[j] = s->tasks[j];
    s->last_start[j] = s->arrival[j];
    s->active[j] = 1;
    return queue_job(s, j, now);
}

/* Whether an event is left; its time in *t. */
static int next_time(hlas_t *s, double *t) {
    i64 k = s->ints[I_ARRIVED];
    int arrival = k < s->n_jobs, other = s->ints[I_HEAP] > 0;
    if (!arrival && !other) return 0;
    double a = arrival ? s->arrival[s->queue_job[k]] : INFINITY;
    *t = other && s->heap_t[0] < a ? s->heap_t[0] : a;
    return 1;
}

/* The next event: an arrival when it is not later than the heap's first (its number is
 * smaller than any other event's). */
static void take(hlas_t *s, i32 *kind, i32 *who) {
    i64 k = s->ints[I_ARRIVED];
    if (k < s->n_jobs &&
        (s->ints[I_HEAP] == 0 || s->arrival[s->queue_job[k]] <= s->heap_t[0])) {
        s->ints[I_ARRIVED] = k + 1;
        *kind = ARRIVE, *who = s->queue_job[k];
        return;
    }
    pop(s, kind, who);
}

/* Process events until the run is over (DONE) or Python is needed: new thresholds (LEVELS,
 * after the event that finished the job), a full replay buffer (FLUSH, before the step that
 * could overflow it) or a bigger revisit heap (GROW, between instants). */
int hlas_run(hlas_t *s) {
    i64 *li = s->ints;
    double *f = s->floats;
    if (li[I_REKEY]) { /* the thresholds changed: new keys for every waiting job */
        li[I_REKEY] = 0;
        for (i64 j = 0; j < s->n_jobs; j++)
            if (s->active[j] && s->waiting[j] && queue_job(s, j, f[F_NOW])) return FULL;
    }
    for (;;) {
        if (li[I_PHASE] == 0) { /* a new instant */
            if (!next_time(s, &f[F_NOW]) || li[I_UNFINISHED] == 0) return DONE;
            if (s->rev_room - li[I_REVISITS] < li[I_MARGIN]) return GROW;
            li[I_PHASE] = 1;
        }
        double now = f[F_NOW];
        if (li[I_PHASE] == 1) { /* its events */
            double t;
            while (next_time(s, &t) && t == now) {
                if (li[I_LOGGING] && li[I_LOG] + 1 > s->log_room) return FLUSH;
                i32 kind, who;
                take(s, &kind, &who);
                li[I_EVENTS]++;
                int status = handle(s, kind, who, now);
                if (status) return status;
            }
            li[I_PHASE] = 2;
        }
        /* the decision (engine.settle -> _decide) */
        i64 waiting = 0;
        for (i64 level = 0; level < s->depth; level++) waiting += s->queued[level];
        if (li[I_IDLE] && waiting) {
            if (li[I_LOGGING] && li[I_LOG] + 2 * li[I_IDLE] > s->log_room) return FLUSH;
            if (li[I_REVISITS] && s->rev_t[0] <= now && requeue_due(s, now)) return FULL;
            i64 made = decide(s);
            for (i64 k = 0; k < made; k++) start_task(s, s->dec_job[k], s->dec_gpu[k], now);
            li[I_DECISIONS] += made;
            i64 stamp = ++li[I_STAMP];
            i64 touched = 0;
            for (i64 k = 0; k < made; k++) {
                i32 g = s->dec_gpu[k], j = s->dec_job[k];
                i64 c = s->speed_class[g];
                set_remove(idle_set(s, c), s->widest, s->position[g]);
                s->idle_in_class[c]--;
                if (s->left_stamp[j] != stamp) {
                    s->left_stamp[j] = stamp;
                    s->touched[touched++] = j;
                }
            }
            li[I_IDLE] -= made;
            qsort(s->touched, (size_t)touched, sizeof(i32), by_index);
            for (i64 k = 0; k < touched; k++) {
                i32 j = s->touched[k];
                if (s->waiting[j]) {
                    if (queue_job(s, j, now)) return FULL;
                } else if (s->in_queue[j]) {
                    unindex_job(s, j);
                }
            }
        }
        li[I_PHASE] = 0;
    }
}
