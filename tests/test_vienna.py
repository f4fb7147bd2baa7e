"""ontologies/vienna.py: the Wiener Linien network as RDF (real data + hand-made edge cases), no Spark."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pyoxigraph
import pytest

from ontologies import vienna
from ontologies.vienna import (BEG, DUR, END, MEANS, STEPHANSPLATZ, SUBWAY, TRAM, ViennaDataError, build,
                               great_circle_metres, station_iri, stop_point_iri, triples, xsd_duration)
from paths import lower, parse
from paths.reference import evaluate as reference_evaluate

NS = {"": vienna.VIENNA_NS}


@pytest.fixture(scope="module")
def network(shared_data):
    return build(shared_data)


def _spo(lines: list[str]) -> list[tuple[str, str, str]]:
    out = []
    for line in lines:
        s, p, rest = line.split(" ", 2)
        out.append((s, p, rest[: -len(" .\n")]))
    return out


# --- real data ------------------------------------------------------------------------------

def test_stephansplatz_is_one_station_grouping_u1_u3_platforms(network):
    st = network.stations[vienna.STEPHANSPLATZ_DIVA]
    assert st.name == "Stephansplatz"
    # haltestellen has latitude and longitude swapped: we must have read them back the right way
    assert 48.20 < st.lat < 48.22 and 16.36 < st.lon < 16.38
    points = {p.stop_id for p in network.stop_points.values() if p.diva == vienna.STEPHANSPLATZ_DIVA}
    assert {"4111", "4118", "4906", "4911", "2720"} <= points  # U1 (4111, 4118), U3 (4906, 4911), surface
    lines_at = {network.lines[c.line_id].text for c in network.connections.values()
                if STEPHANSPLATZ in (station_iri(c.from_station), station_iri(c.to_station))}
    assert {"U1", "U3"} <= lines_at


def test_all_coordinates_are_in_the_vienna_area(network):
    # catches a swapped latitude/longitude anywhere (Vienna ~48.2 N, 16.4 E; Badner Bahn to Baden)
    for st in network.stations.values():
        if st.lat is not None:
            assert 47.5 < st.lat < 48.6 and 15.8 < st.lon < 17.0, st
    for sp in network.stop_points.values():
        assert 47.5 < sp.lat < 48.6 and 15.8 < sp.lon < 17.0, sp


def test_bad_rows_are_counted_and_located(network, shared_data):
    by_reason = network.rejects_by_reason()
    patterns = Path(vienna.PATTERNS_FILE).name
    # the file ends with 220 metro rows lacking the Direction column (duplicates of earlier rows)
    assert by_reason[f"{patterns}: wrong number of fields"] == 220
    assert by_reason[f"{patterns}: unknown line"] > 0          # LineIDs 172, 615, 681 are not in linien
    assert by_reason[f"{Path(vienna.STOP_POINTS_FILE).name}: no station"] == 853
    raw_lines = (shared_data / vienna.PATTERNS_FILE).read_text(encoding="utf-8").splitlines()
    for reject in network.rejects[:50] + network.rejects[-50:]:
        source = Path(reject.file).read_text(encoding="utf-8").splitlines()
        assert source[reject.line - 1] == reject.raw
    assert any(r.raw == raw_lines[-1] for r in network.rejects)
    assert len(network.rejects) == sum(by_reason.values())


def test_subway_connections_and_estimated_durations(network):
    subway = [c for c in network.connections.values() if network.lines[c.line_id].transport_type == "ptMetro"]
    assert 150 < len(subway) < 300
    for c in subway:
        a, b = network.stop_points[c.from_stop], network.stop_points[c.to_stop]
        metres = great_circle_metres(a.lat, a.lon, b.lat, b.lon)
        assert c.metres == round(metres)
        assert c.seconds == -(-metres // (32 / 3.6))
        assert 200 < c.metres < 5000  # consecutive U-Bahn stations


def test_running_example_query_on_the_real_network(network):
    """``?s (^:beg/[:means :subway]/:end)+ :c`` with :c = Stephansplatz: every U-Bahn station, no tram-only stop."""
    graph = _spo(triples(network))
    conns = {s for s, p, o in graph if p == MEANS and o == SUBWAY}
    tram_conns = {s for s, p, o in graph if p == MEANS and o == TRAM}
    # keep the subway connections and a slice of trams, so the nested test has something to reject
    keep = conns | set(sorted(tram_conns)[:400])
    small = [(s, p, o) for s, p, o in graph if s in keep and p in (BEG, END, MEANS)]
    path = lower(parse("(^:beg/[:means :subway]/:end)+", NS))
    starts = {s for s, _ in reference_evaluate(small, path, end=STEPHANSPLATZ)}
    # oracle: walk the subway connections backwards from Stephansplatz
    into = defaultdict(set)
    beg = {s: o for s, p, o in small if p == BEG}
    for s, p, o in small:
        if p == END and s in conns:
            into[o].add(beg[s])
    seen, todo = set(), [STEPHANSPLATZ]
    while todo:
        for x in into[todo.pop()]:
            if x not in seen:
                seen.add(x)
                todo.append(x)
    assert starts == seen
    names = {network.stations[s[len("<" + vienna.VIENNA_NS) + 2:-1]].name for s in starts}
    assert {"Karlsplatz", "Westbahnhof", "Praterstern", "Stephansplatz", "Schottenring"} <= names
    subway_stations = {o for s, p, o in small if s in conns and p in (BEG, END)}
    assert starts == subway_stations  # the U-Bahn network is connected


def test_cli_writes_valid_ntriples(shared_data, tmp_path, capsys):
    out, rejects = tmp_path / "vienna.nt", tmp_path / "rejects.csv"
    assert vienna.main(["--data-dir", str(shared_data), "--out", str(out), "--rejects", str(rejects)]) == 0
    report = json.loads(capsys.readouterr().out)
    store = pyoxigraph.Store()
    store.load(path=str(out), format=pyoxigraph.RdfFormat.N_TRIPLES)  # strict parser: the file is valid
    assert len(store) == report["triples"]
    assert report["connections"] > 10_000 and report["rejected"] == sum(report["rejects_by_reason"].values())
    assert "ESTIMATE" in out.read_text(encoding="utf-8").split("\n", 3)[2]
    assert len(rejects.read_text(encoding="utf-8").splitlines()) >= report["rejected"] + 1
    durs = list(store.quads_for_pattern(pyoxigraph.NamedNode("http://example.org/vienna#conn_301_4109_4111"),
                                        pyoxigraph.NamedNode(DUR[1:-1]), None))
    assert len(durs) == 1 and durs[0].object.datatype.value.endswith("#duration")


# --- hand-made CSVs ---------------------------------------------------------------------------

LINES = "LineID;LineText;SortingHelp;Realtime;MeansOfTransport\n1;U9;1;0;ptMetro\n2;99;2;0;ptTram\n"
STATIONS = ("DIVA;PlatformText;Municipality;MunicipalityID;Longitude;Latitude\n"
            "100;Alpha;Wien;1;48.20;16.30\n200;Beta;Wien;1;48.21;16.31\n300;Gamma;Wien;1;48.22;16.32\n"
            "400;Delta;Wien;1;;\n")
POINTS = ("StopID;DIVA;StopText;Municipality;MunicipalityID;Longitude;Latitude\n"
          "11;100;Alpha U;Wien;1;16.30;48.20\n12;100;Alpha;Wien;1;16.301;48.20\n"
          "21;200;Beta;Wien;1;16.31;48.21\n31;300;Gamma;Wien;1;16.32;48.22\n"
          "41;400;Delta;Wien;1;16.33;48.23\n"
          "90;;Abstellplatz;;;;\n91;300;Broken;Wien;1;x;48.2\n")


def make(tmp_path: Path, patterns: str, *, lines: str = LINES, stations: str = STATIONS,
         points: str = POINTS) -> Path:
    d = tmp_path / "vienna"
    d.mkdir(exist_ok=True)
    for name, text in ((vienna.LINES_FILE, lines), (vienna.STATIONS_FILE, stations),
                       (vienna.STOP_POINTS_FILE, points), (vienna.PATTERNS_FILE, patterns)):
        (tmp_path / name).write_text(text.replace("\n", "\r\n"), encoding="utf-8")  # CRLF like the source
    return tmp_path


HEAD = "LineID;PatternID;StopSeqCount;StopID;Direction\n"


def test_connections_between_stations_with_bridges_and_same_station_hops(tmp_path):
    net = build(make(tmp_path, HEAD +
                     "1;1;0;11;1\n1;1;1;12;1\n"      # Alpha U -> Alpha: same station, no connection
                     "1;1;3;21;1\n"                   # gap in StopSeqCount is fine: Alpha -> Beta
                     "1;1;4;90;1\n1;1;5;91;1\n"       # two unplaced stop points: rejected, bridged
                     "1;1;6;31;1\n1;1;6;31;1\n"       # Beta -> Gamma (bridged); duplicate row
                     "1;2;0;31;2\n1;2;1;21;2\n"       # the other direction
                     "2;1;0;11;1\n2;1;1;41;1\n"))     # tram Alpha -> Delta (station without coordinates)
    keys = {(c.line_id, c.from_station, c.to_station) for c in net.connections.values()}
    assert keys == {("1", "100", "200"), ("1", "200", "300"), ("1", "300", "200"), ("2", "100", "400")}
    assert net.counts["same_station_hops"] == 1
    assert net.counts["bridged_connections"] == 1
    assert net.counts["duplicate_rows"] == 1
    reasons = {(Path(r.file).name, r.line): r.reason.split(":")[0] for r in net.rejects}
    pat, pts, sts = (Path(f).name for f in (vienna.PATTERNS_FILE, vienna.STOP_POINTS_FILE, vienna.STATIONS_FILE))
    assert reasons == {(pat, 5): "unplaced stop point", (pat, 6): "unplaced stop point",
                       (pts, 7): "no station", (pts, 8): "no coordinates", (sts, 5): "no coordinates"}
    assert net.stations["400"].lat is None  # kept, without coordinates
    spo = _spo(triples(net))
    conn = vienna.connection_iri("1", "12", "21")
    assert (conn, BEG, station_iri("100")) in spo and (conn, END, station_iri("200")) in spo
    assert (conn, vienna.BEG_POINT, stop_point_iri("12")) in spo
    assert (conn, MEANS, SUBWAY) in spo
    assert (vienna.connection_iri("2", "11", "41"), MEANS, TRAM) in spo
    # the swapped haltestellen columns: Alpha's latitude is the value under "Longitude"
    assert (station_iri("100"), vienna.GEO_LAT, '"48.20"^^<http://www.w3.org/2001/XMLSchema#decimal>') in spo


def test_bad_pattern_rows_are_rejected_with_their_line(tmp_path):
    net = build(make(tmp_path, HEAD + "1;1;0;11;1\n3;1;1;21;1\n1;1;x;21;1\n1;1;2;21\n1;1;3;21;7\n1;1;4;77;1\n"))
    got = [(r.line, r.reason.split(":")[0]) for r in net.rejects if r.file.endswith(Path(vienna.PATTERNS_FILE).name)]
    assert got == [(3, "unknown line"), (4, "bad number"), (5, "wrong number of fields"), (6, "bad Direction"),
                   (7, "unplaced stop point")]
    assert not net.connections  # only one placed stop per pattern


def test_unknown_means_of_transport_rejects_the_line(tmp_path):
    net = build(make(tmp_path, HEAD, lines=LINES + "3;Z;3;0;ptZeppelin\n"))
    assert set(net.lines) == {"1", "2"}
    assert [r.line for r in net.rejects if "MeansOfTransport" in r.reason] == [4]


def test_bad_header_and_missing_file_stop_the_build(tmp_path):
    root = make(tmp_path, "LineID;PatternID;StopID\n")
    with pytest.raises(ViennaDataError, match=r"fahrwegverlaeufe\.csv:1: expected the header"):
        build(root)
    (root / vienna.LINES_FILE).unlink()
    with pytest.raises(ViennaDataError, match="linien.csv:0: no such file"):
        build(root)


def test_cli_errors_are_one_line_exit_2(tmp_path, capsys):
    assert vienna.main(["--data-dir", str(tmp_path / "nope"), "--out", str(tmp_path / "x.nt")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    root = make(tmp_path, "bad\n")
    assert vienna.main(["--data-dir", str(root), "--out", str(tmp_path / "x.nt")]) == 2
    assert "fahrwegverlaeufe.csv:1" in capsys.readouterr().err


@pytest.mark.parametrize("seconds, text", [(0, "PT0S"), (5, "PT5S"), (60, "PT1M"), (125, "PT2M5S"),
                                           (3600, "PT1H"), (3725, "PT1H2M5S")])
def test_xsd_duration(seconds, text):
    assert xsd_duration(seconds) == text


def test_great_circle_distance():
    # one degree of latitude is R * pi / 180 = 111.195 km; 0.01 degree of longitude at 48 N is cos(48) of that
    import math
    assert abs(great_circle_metres(48, 16.37, 48, 16.38) - 1111.95 * math.cos(math.radians(48))) < 0.5
    assert abs(great_circle_metres(48, 16, 49, 16) - 111_195) < 5
