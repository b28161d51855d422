// placeholder until matcher.cc lands
