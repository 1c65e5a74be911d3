/* A shared library that is not a metatune plugin: no entry symbol, no marker section. */
int not_a_plugin_function(int x);
__attribute__((visibility("default"))) int not_a_plugin_function(int x) {
  return x + 1;
}
