// CPU implementation; nothing for hipify to change ([skipped, no changes]).
extern "C" int torchvision_sample_threshold_cpu(const float* scores, int* keep, float threshold, int n) {
  for (int i = 0; i < n; ++i) {
    keep[i] = scores[i] >= threshold ? 1 : 0;
  }
  return 0;
}
