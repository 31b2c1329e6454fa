-- A source's URL is unique through its MD5, not the text itself: a B-tree entry holds at most 2704 bytes, and a URL of
-- the 2048 characters the API takes is up to 8 KiB of UTF-8 (non-ASCII in its path), which no compression of random
-- text brings under that: its INSERT failed with 54000 (index row size exceeds maximum), a 500. Equal URLs have equal
-- hashes, so every duplicate is still refused; lookups by URL compare the hash first to use the index.
CREATE UNIQUE INDEX scheduler_sources_url_md5_key ON scheduler_sources (md5(url));
DROP INDEX scheduler_sources_url_key;
