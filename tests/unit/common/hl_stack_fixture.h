/* hl_stack_fixture.h — allocation samples and stacks added to a test recording.
 *
 * The tables frames, stacks, stack_frames, alloc_samples and sampling (store/SCHEMA.md,
 * "Allocation samples and stacks"), created by the writer, are filled with a set of samples
 * whose every answer is known by construction. Types 1 App.Node, 2 System.String, 3 System.Byte[] are
 * expected in the recording (they are named "<type N>" otherwise).
 *
 *   stack (innermost first)                                   type    samples  count   bytes
 *   S1 App.Tree.NewNode <- App.Tree.Build <- App.Program.Run
 *      <- App.Program.Main                                     Node    a b       2,000  128,000
 *   S2 App.Names.Make <- App.Program.Run <- App.Program.Main   String  c d g     7,000  224,000
 *   S3 App.Names.Make <- App.Cache.Fill <- App.Program.Main    String  e         2,000   64,000
 *   S5 [native]                                                String  i           500   16,000
 *   S4 App.Cache.Fill <- App.Program.Main                      Byte[]  f            10   10,000
 *   (no stack)                                                 Node    h           100    6,400
 *
 *   sample  interval (gc)  object (link_objects)  fate of the object in the test recording
 *   a       1              1                      gen1 after GC 1, gen2 after GC 2, alive
 *   b       1              2                      gen2 after GC 2, died in GC 3 (mid-life)
 *   c       1              3                      gen1 after GC 1, died in GC 2
 *   d       1              -                      (died young)
 *   e       1              -
 *   f       1              4                      gen2 after GC 2, died in GC 3 (mid-life)
 *   g       2              -
 *   i       2              -
 *   h       4 (tail)       -
 *
 * Totals: 9 samples, 11,610 allocations, 448,400 bytes. Sampling: AllocationSampled, mean
 * distance 102,400 bytes, unbiased, 9 samples, `dropped` dropped.
 */
#ifndef HEAPLENS_HL_STACK_FIXTURE_H
#define HEAPLENS_HL_STACK_FIXTURE_H

#include <glib.h>
#include <stdint.h>

/* Adds the samples above to the database at `path`. object ids are
 * set only with `link_objects`. FALSE with a message in *error on failure. */
gboolean hl_stack_fixture_add(const char *path, gboolean link_objects, int64_t dropped,
                              GError **error);

#endif /* HEAPLENS_HL_STACK_FIXTURE_H */
