// The curator page (templates/curator.html): one .card.cut per restorable cut.
// Keys: j/k move, r restores the selected cut (POST /review/api/curator/cuts/{id}/restore,
// JSON with the X-Memory-Platform header); the card leaves on 200 and shows the error
// otherwise (409: the window is over, or its text is active again). The purge countdowns
// tick down once a minute from each card's data-until.
const list=document.getElementById('cuts'),counter=document.getElementById('total');
const cards=()=>[...list.querySelectorAll('.card.cut')];
let sel=0;
function show(){const c=cards();if(!c.length){list.innerHTML=
 '<p class=ok id=empty>No restorable cut left here.</p>';return}
 sel=Math.max(0,Math.min(sel,c.length-1));c.forEach((x,i)=>x.classList.toggle('sel',i===sel));
 c[sel].scrollIntoView({block:'nearest'});}
function left(seconds){for(const [u,s] of [['d',86400],['h',3600],['min',60]])
 if(seconds>=s)return `${Math.floor(seconds/s)} ${u}`;return `${Math.floor(seconds)} s`;}
function tick(){for(const c of cards()){const s=(Date.parse(c.dataset.until)-Date.now())/1000;
 const el=c.querySelector('.countdown');if(s>0)el.textContent=`purged in ${left(s)}`;
 else{el.textContent='restore window over: due for purge';el.classList.add('due');}}}
async function restore(card){if(!card||card.dataset.busy)return;card.dataset.busy=1;
 const r=await fetch(`/review/api/curator/cuts/${card.dataset.id}/restore`,{method:'POST',
  headers:{'Content-Type':'application/json','X-Memory-Platform':'1'},body:'{}'});
 let d={};try{d=await r.json()}catch(e){}delete card.dataset.busy;
 if(r.status===200){const run=card.closest('.run');card.remove();
  counter.textContent=+counter.textContent-1;
  if(run&&!run.querySelector('.card.cut'))run.remove();show();return;}
 card.querySelector('.msg').textContent=(r.status===409?'Refused: ':`Error ${r.status}: `)+
  (typeof d.detail==='string'?d.detail:'request failed');}
list.addEventListener('click',ev=>{const card=ev.target.closest('.card.cut');if(!card)return;
 sel=cards().indexOf(card);show();
 if(ev.target.closest('button[data-act=restore]'))restore(card);});
document.addEventListener('keydown',ev=>{const t=ev.target.tagName;
 if(t==='TEXTAREA'||t==='INPUT'||t==='SELECT'||ev.metaKey||ev.ctrlKey||ev.altKey)return;
 if(ev.key==='j'){sel+=1;show();}else if(ev.key==='k'){sel-=1;show();}
 else if(ev.key==='r')restore(cards()[sel]);else return;ev.preventDefault();});
show();tick();setInterval(tick,60000);
