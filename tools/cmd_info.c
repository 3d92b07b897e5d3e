#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"
#include "tools/commands.h"

static const char usage[] =
    "usage: kiln info\n\n"
    "Lists every OpenCL platform and device with its index (P:D, as KILN_DEVICE takes it),\n"
    "memory, compute units and fp64/fp16 support, and marks the device kiln would pick.\n";

static void
print_mib(const char *label, uint64_t bytes)
{
  printf("      %-18s %.0f MiB\n", label, (double)bytes / (1024.0 * 1024.0));
}

int
cmd_info(int argc, char **argv)
{
  if (tool_wants_help(argc, argv, usage))
    return 0;
  if (argc > 1) {
    fprintf(stderr, "kiln info: unexpected argument '%s'\n%s", argv[1], usage);
    return 2;
  }
  size_t n = 0, def = SIZE_MAX;
  if (kiln_device_list(NULL, 0, &n, NULL) != KILN_OK) {
    fprintf(stderr, "kiln info: %s\n", kiln_last_error());
    return 1;
  }
  printf("kiln %s\n", kiln_version());
  if (n == 0) {
    printf("no OpenCL devices found (install an ICD, e.g. pocl-opencl-icd)\n");
    return 1;
  }
  kiln_device_info *infos = calloc(n, sizeof *infos);
  if (!infos)
    return 1;
  kiln_device_list(infos, n, &n, &def);
  const char *env = getenv("KILN_DEVICE");
  for (size_t i = 0; i < n; i++) {
    kiln_device_info *d = &infos[i];
    printf("%s %u:%u  %s\n", i == def ? "*" : " ", d->platform_index, d->device_index, d->name);
    printf("      %-18s %s (%s)\n", "platform", d->platform_name, d->platform_version);
    printf("      %-18s %s\n", "vendor", d->vendor);
    printf("      %-18s %s / %s\n", "version / driver", d->device_version, d->driver_version);
    printf("      %-18s %s, %u compute units, max work-group %zu\n", "type",
           d->is_gpu ? "GPU" : "CPU/other", d->compute_units, d->max_work_group_size);
    print_mib("global memory", d->global_mem_bytes);
    print_mib("max allocation", d->max_alloc_bytes);
    printf("      %-18s %llu KiB\n", "local memory", (unsigned long long)(d->local_mem_bytes / 1024));
    printf("      %-18s fp64 %s, fp16 %s\n", "features", d->has_fp64 ? "yes" : "no",
           d->has_fp16 ? "yes" : "no");
  }
  if (def == SIZE_MAX)
    printf("\nKILN_DEVICE=%s matches no device: %s\n", env ? env : "", kiln_last_error());
  else
    printf("\n* = the device kiln uses%s\n",
           env && *env ? " (chosen by KILN_DEVICE)" : " (first GPU, else first CPU)");
  free(infos);
  return def == SIZE_MAX ? 1 : 0;
}
