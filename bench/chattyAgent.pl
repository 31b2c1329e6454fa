#!/usr/bin/perl
# The chatty agent of bench/logs.ts (--agent perl, the default): prints CHATTY_RATE lines per second for
# CHATTY_SECONDS seconds, each `chatty <n> <epoch ms when written>`, then exits 0, as bench/chattyAgent.js does.
# Lines are paced by elapsed time, not by wake-ups, so the count is exact however late the sleeps end. Perl because
# the agents are the benchmark's load, not what it measures: 50 of these use about a quarter of the CPU of 50
# Node processes doing the same (perl comes with git, which Armada needs anyway).
use strict;
use warnings;
use Time::HiRes qw(time sleep);

$| = 1;
my $rate = $ENV{CHATTY_RATE} || 200;
my $seconds = $ENV{CHATTY_SECONDS} || 30;
my $total = $rate * $seconds;
my $t0 = time();
my $n = 0;
while ($n < $total) {
  my $due = int((time() - $t0) * $rate);
  $due = $total if $due > $total;
  my $out = '';
  while ($n < $due) {
    $n++;
    $out .= sprintf("chatty %d %.3f\n", $n, time() * 1000);
  }
  print $out if length $out;
  sleep(0.005) if $n < $total;
}
exit 0;
